"""Kills whose cause the log does not give: SIGKILL in its many reports, and the deaths a
supervisor saw without knowing why.

The shell's "Killed" in every locale and wrapping, exit statuses 137 and -9, a kill told in a
sentence, a batch scheduler's or a launcher's line for a task lost to SIGKILL, Ray's and
Jupyter's reports of a worker or kernel that died; and kills with a cause of their own that
look like these (macOS's code-signing kill, a launcher tearing down its other children).
The verdict answers killed_unknown for these unless something else in the log names the
cause. Patterns follow the bounds of *_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.reported import REPORTED_SIGKILL
from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

# The shell's word for SIGKILL in its job report, in English and as common locales print it.
_KILLED = (
    r"(?:Killed|\u5df2\u6740\u6b7b|\u5df2\u6bba\u6b7b|Get\u00f6tet|\u5f37\u5236\u7d42\u4e86"
    r"|\u0423\u0431\u0438\u0442\u043e|\uc8fd\uc5c8\uc74c|Ucciso|Processus arr\u00eat\u00e9"
    r"|Terminado \(killed\)|Unicestwiony|Morto)"
)
# Markdown and quoting a pasted log picks up around the word: **Killed**, `Killed`, > Killed.
_WRAP = r"[\s*_`>#\"']"

SIGKILL = Family(
    "sigkill_cause_unknown",
    "killed_unknown",
    "medium",
    _p(
        r"(?:exit|status|return|error)[ _]?(?:code|status)[:=]?\s{0,12}[(`]?-?(?:137|-9)\b"
        r"|exitcode\s{0,3}:\s{0,3}-9\b|(?:exited|returned) with (?:code|status) 137\b"
        # "then gets killed by itself"; a GitHub runner's job ended from outside, alone on
        # its line: "The operation was canceled."
        r"|\b(?:gets?|got|is|was) killed by itself\b"
        # ... with the signal's number after it: "and it was killed -9".
        r"|\b(?:gets?|got|is|was|been) killed -9\b"
        r"|(?:^|[\s\]>*#`])(?:Error: )?The operation was canceled\.?\s*$"
        r"|exit (?:code|status)[^\n]{0,80}?:\s{0,3}137\s*$"  # "... Docker Container: 137"
        r"|non-zero exit status 137\b|\bsignal: killed\b|\bSIGKILL\b"  # not "sigkill_handler"
        r"|sigkill_handler\] Killing subprocess"  # DeepSpeed's launcher, tearing down
        r"|killed by signal:\s?Killed|received signal 9\b|\bcommand returned:? -9\b"
        r"|\bsignal 9\b|\bKilled: 9\b"
        r"|(?:code|status)\"?\s{0,2}[:=]?\s{0,2}\"?(?:137|-9)\b|\bError 137\b"
        r"|exited (?:with )?(?:code )?137\b"
        r"|\bExited \((?:137|-9)\)"  # docker ps, docker inspect's State.Status line
        r"|\b(?:exit|exited|terminated|killed) with (?:status|signal) (?:9|137)\b"
        r"|\b(?:rc|ret|retval)\s{0,2}[:=]\s{0,2}(?:137|-9)\b"  # a shell trace's rc=137
        # MPICH's Hydra banner gives the signal's number, not 128 + 9.
        r"|(?-i:EXIT CODE: 9)\s*$|(?-i:KILLED BY SIGNAL: 9)\b|\bsignal:\s{0,2}9\b"
        rf"|^{_WRAP}{{0,8}}{_KILLED}{_WRAP}{{0,8}}[.!;]{{0,3}}$"  # the shell's job report
        # ... the last line of a log pasted in one inline code span, the sentence going on
        # after it: "Killed`,so could anyone give some advice?".
        rf"|^{_WRAP}{{0,8}}{_KILLED}`[,.;:]?"
        rf"|(?:\d{{1,10}}|\]\+?)\s{{1,12}}{_KILLED}(?:\s|$)"  # "line 18:  36 Killed  python3"
        # glued to a tqdm progress bar ("it/s]Killed", datasets' "examples/s]Killed")
        rf"|(?:it/s|s/it|\b[a-z]{{1,12}}/s)\]\s{{0,4}}{_KILLED}\s*$"
        rf"|\bETA:\s{{0,4}}\d{{1,6}}s\s{{0,4}}{_KILLED}\s*$"  # ... or to mmcv's
        r"|\bit (?:got |was |gets )?killed again\b"
        # "开始训练后不久自己kill了" (it killed itself soon after the training started).
        r"|(?:\u81ea\u5df1|\u81ea\u52a8|\u81ea\u52d5)\s?kill(?:\u4e86|\u6389)"
        # "训练到14个epoch时, 程序killed" (the program was killed), the word after a Chinese noun.
        r"|(?:\u7a0b\u5e8f|\u8fdb\u7a0b|\u8bad\u7ec3)\s?(?:\u88ab)?\s?killed\b"
        # ... "进程被杀" (the process was killed), said in Chinese.
        r"|(?:\u7a0b\u5e8f|\u8fdb\u7a0b)\u88ab(?:\u7cfb\u7edf)?\u6740"
        # ... or written over a progress line's start, its tail still showing: "Killedg in
        # train batch: 127687 / 263115" (no English word starts "Killed" and goes on).
        r"|^(?-i:Killed)(?=[a-z]{1,3} [a-z])"
        # glued to a progress line's dots: "Collecting...Killed", "...tar...Killed`."
        rf"|\.{{3}}\s?{_KILLED}[`'\"]?\.?\s*$"
        r"|\b(?:zsh|bash|sh|fish) ?: killed\b|\bzsh killed\b|\bKilled\s{1,4}python"
        r"|\bReceived \"killed\" signal\b"  # CircleCI
        # docker compose's log prefix before the shell's word: "webpack_1  | Killed".
        rf"|^{_WRAP}{{0,8}}[\w.-]{{1,80}}\s{{1,12}}\|\s{{1,12}}{_KILLED}\s*$"
        # A wrapper's exception for its child's status: "Exception: Child returned 137".
        r"|\b(?:Child|child process|subprocess) returned:? (?:137|-9)\b"
        # Spanish bash's job report quoted in a sentence: 'recibe un "Terminado Killed"'.
        r"|[\"'`\u201c]Terminado \(?killed\)?[\"'`\u201d]"
        r"|\"status\":\s?\"killed\",\s?\"errorCode\":\s?9\b"  # Chrome's Target.targetCrashed
        r"|\b(?:Proc|Process|Task|Job):\s{0,3}Killed\b"  # a batch step's status line
        # Nextflow's report of a task its scheduler ended: "terminated for an unknown reason
        # -- Likely it has been terminated by the external system", or with the status a
        # batch system gives a job it killed at a limit (140: SIGUSR2 + 128, or 137).
        r"|\bterminated for an unknown reason -- Likely it has been terminated by the external"
        r"|\bterminated with an error exit status \((?:137|140)\)"
        # ... or named as the error a run ends with: "it ends with Killed error again".
        r"|\b(?:ends?|ended|exits?|exited|stops?|stopped|dies|died) with (?:a |an |the )?"
        r"(?-i:Killed) (?:error|message)\b"
        # ... or printed: "it simply crashes with `Killed` printed to the console".
        r"|\b(?:crash(?:es|ed)?|ends?|ended|exits?|exited|dies|died) with [`'\"](?-i:Killed)[`'\"]"
        r" printed\b"
        # The word reported bare: "python -m app shows killed in line 163".
        r"|\b(?:shows?|showed|prints?|printed|says|said) killed"
        r"(?= (?:in|at) line\b| at (?:last|the end)\b| after\b|\s*[.!]?\s*$)"
        # GCC's driver reporting a compiler pass it lost to a signal, in the system's locale:
        # "g++: fatal error: Killed signal terminated program cc1plus".
        rf"|\bfatal error: {_KILLED} signal terminated program\b"
        # ... or older GCC's: "c++: internal compiler error: Killed (program cc1plus)".
        rf"|\binternal compiler error: {_KILLED} \(program \w{{1,40}}\)"
        # The shell's word quoted in a sentence: 'the terminal just shows _"Killed"_'.
        r"|\b(?:shows?|showed|showing|prints?|printed|says|said|ends?|ended|ending|exits?"
        r"|exited|dies|died|stops?|stopped|get|gets|got|getting|display|displays|displayed"
        r"|write|writes|wrote|popup|pops? up) (?:just |only |with |in )?"
        r"(?:a |the )?(?:message |error )?"
        r"[_*`\"'\u2018\u201c]{1,3}(?:(?-i:Killed)\.?[_*`\"'\u2019\u201d]{1,3}"
        # ... in lower case only as the whole report: 'shows "killed" and no stack trace'.
        r"|(?-i:killed)\.?[_*`\"']{1,3}(?= and\b| without\b| message\b|[.,;]|\s*$))"
        # ... or named as the trouble: 'The "killed" issue could be due to ...'.
        r"|\b(?:the|a|an) (?:simple |single |plain |bare |short |weird )?[_*`\"']{1,3}"
        r"(?-i:[Kk]illed)[_*`\"']{1,3} (?:issue|error|problem|message)\b"
        # ... or unquoted before its noun: "I simply get a Killed message".
        r"|\b(?:get|gets|got|getting|see|saw) (?:a |the )?(?-i:Killed) (?:message|error)\b"
        # ... or quoted before it: 'It always result in: "Killed" message'.
        r"|[\"'`\u201c](?-i:Killed)[\"'`\u201d] (?:message|error)\b"
        # ... or a title starting with it: '"killed" error when starting up'.
        r"|^[_*`\"']{1,3}(?-i:[Kk]illed)[_*`\"']{1,3} (?:issue|error|problem|message)\b"
        r"|\b(?:last words?|string|message|output)(?: of| is| was)?:? "
        r"[_*`\"']{1,3}(?-i:[Kk]illed)\.?[_*`\"']{1,3}"
        r"|\b(?:display(?:s|ed)?|show(?:s|ed)?|print(?:s|ed)?|wrote|writes) "
        r"[_*`\"']{1,3}(?-i:Killed)\.?[_*`\"']{1,3}"
        r"|\b(?:other than|except(?: for)?|besides|nothing but|apart from"
        r"|(?:messages?|output|lines?|logs?) after) "
        r"[_*`\"']{1,3}(?-i:Killed)\.?[_*`\"']{1,3}"
        # The shell's word in a Chinese sentence: "出现Killed", "被Killed掉", "退出" and
        # "(killed)" in full-width parentheses; not in a question of why ("为什么会被killed").
        r"|^(?:(?!为什么|為什麼|为何|為何|请问|請問)[^\n]){0,160}?"
        r"(?:出现|出現|被|报|報|提示|显示|顯示|退出|直接|都会|都會)\s?[\uff08(\u201c\"\u300c]?\s?"
        r"(?i:killed)\b"
        # ... and "被kill" ("was killed"): "进程总是被kill".
        r"|^(?:(?!为什么|為什麼|为何|為何|请问|請問)[^\n]){0,160}?被\s?(?i:kill)(?!\w)"
        # ... and "kill进程" (kill the process): "每次都是在这一句话之后kill进程".
        r"|(?:之后|之後|以后|以後|然后|然後|就|会|會)\s?(?i:kill)(?:了|掉)?(?:进程|進程)"
        # ... and an exit status: "返回错误码-9", "退出码 137".
        r"|(?:错误码|錯誤碼|返回码|返回碼|退出码|退出碼|状态码|退出代码为|退出代碼為|代码为|代碼為)"
        r"\s{0,3}[:\uff1a]?\s{0,3}(?:137|-9)\b"
        # The exit status told in a sentence: "exits with a code of 137".
        r"|\bexit(?:s|ed)? with (?:an? )?(?:exit )?(?:code|status) of (?:137|-9)\b"
        r"|\b(?:exit|reason|return|error) (?:code|status) of (?:137|-9)\b"
        # ... or before its noun: "all tasks return a `137` error status".
        r"|\b(?:return|returns|returned|exit|exits|exited)(?: with)? (?:an? |the )?[`'\"]?137"
        r"[`'\"]? (?:error |exit )?(?:status|code)\b"
        # make's report of a recipe whose command was killed: "make: *** [Makefile:40: pytest]
        # Killed".
        r"|\bmake(?:\[\d{1,3}\])?: \*\*\* \[[^\]\n]{1,200}\] (?:Killed|Error 137)\b"
        # ... or as the reason in a sentence: "the container keeps exiting due to 137".
        r"|\b(?:exit(?:s|ed|ing)?|die[sd]|dying|crash(?:es|ed|ing)?|terminat(?:es|ed|ing))"
        r" (?:due to|because of) (?:an? )?(?:exit )?(?:code |status )?(?:137|-9)\b"
        # A kill told in a sentence, by whom it came from if anyone: "keeps getting killed",
        # "get killed by the OS", "the OS kills the process", "it causes my program killed".
        r"|\b(?:keeps?|kept) (?:getting|being) killed\b|\b(?:is|it's|was|were|are) getting killed\b"
        # ... or said of what ran: "The dataset.map function is killed or hanged up".
        r"|\b(?:process|training) will be killed\b(?! if\b| when\b| once\b| unless\b)"
        r"|\b(?:get|gets|got)\s?:\s{0,3}(?-i:Killed)\s*$"  # "I always get : Killed"
        r"|\bgetting (?-i:Killed)\b"  # "a problem of getting Killed suddenly"
        r"|\b(?:function|process|proces|subprocess|script|job|task|program|training|worker)s?"
        r"\s{1,3}(?:still |always |often |sometimes |just )?(?:is|was"
        r"|get|gets|got|were|are|being)\s{1,3}"
        r"(?:always |often |randomly |sometimes |suddenly |just |still )?killed\b(?! by signal)"
        # ... and in the words of those who write "kill" for "killed": "the program will get
        # kill", "i get killed process error".
        r"|\b(?:program|process|script|job|it) (?:will |would )?(?:get|gets|got) kill\b"
        # "it seems always to have the data loader worker killed after running for a while".
        # "then an error message kill 9 is displayed"; "it immediately be killed"; "Then as the
        # consequence, it's got killed"; "Without any error, it was killed"; "it gets killed
        # when loading the training data".
        r"|\bkill -?9 (?:is|was) (?:displayed|shown|printed)\b"
        r"|\b(?:immediately|then|finally) be killed\b"
        r"|(?:^|[,.;]\s?)it(?:'s| has)? (?:was |gets |got |is )?(?:got )?killed\b(?! by signal)"
        r"|\bit gets killed (?:when|while|during|after)\b"
        r"|\b(?:data ?loader|DataLoader) workers? (?:is |was |were |got |gets )?killed\b"
        r"(?! by signal)"
        r"|\b(?:get|gets|got|getting) (?:a |the )?killed process (?:error|message)\b"
        # ... or by what: "it automatically killed my training".
        r"|\b(?:it|system|OS) (?:automatically |just |suddenly )?killed (?:my|the|our) "
        r"(?:training|process|job|program|script|run)\b"
        r"|\b(?:get|gets|got|getting|is|was|were|been|be) (?:forcibly |forcefully )?"
        r"(?:killed|terminated) by (?:the )?"
        r"(?:OS|SO|system|operating system|kernel|Linux)\b"
        r"|\b(?:the|your|my) (?:Linux )?(?:OS|system|kernel) kill(?:s|ed) (?:the|my|our|this|that"
        r"|your) "
        r"(?:process|program|job)"
        r"|\bcaus(?:es|ed) (?:my |the |our )?(?:program|process|job|training) (?:to be |to get "
        r"|being |getting )?killed\b"
        # A notebook service ending its process and printing ^C that nobody typed: "gives a
        # \"^C\" at the last line", "showing a kill command `^C`".
        r"|\b(?:gives?|shows?|showing|prints?|printed|ends? with|with|displays?|displayed) "
        r"(?:a |the )?"
        r"(?:kill command )?[\"'`]\^C[\"'`]" + REPORTED_SIGKILL,
        _I | re.MULTILINE,
    ),
    # earlyoom's start-up line saying when it would send SIGKILL is no kill; nor a kill told
    # as a condition ("if a worker pod crashed due to OOM (exit code 137), I would like ...").
    unless=_p(
        r"\bSIGKILL when mem <="
        r"|\bif\b[^.\n]{0,80}?\((?:exit ?code|exit status)\W{0,3}137\)",
        _I,
    ),
)

# A supervisor's report that the worker it watched died, with nothing about why: Ray's
# worker and actor deaths ("Worker exits unexpectedly", "worker process has died"), Jupyter's
# restarter bringing a dead kernel back. Read after the failures that name a cause (a crash
# signal, an NCCL error), so it only speaks when nothing else does.
WORKER_DIED = Family(
    "worker_died_unknown",
    "killed_unknown",
    "medium",
    _p(
        r"\bWorker (?:exits|exited) unexpectedly\b|\bWorker unexpectedly exit(?:s|ed)\b"
        r"|\bworker process has died\b|\bA worker died or was killed\b"
        r"|\bdied unexpectedly before finishing\b"
        r"|KernelRestarter: restarting kernel\b|\bkernel\b[^\n]{0,80}?\bappears to have died\b"
        r"|\bYour session (?:is |has )?crashed for (?:an )?unknown reason\b"  # Colab
        r"|\bThe Kernel crashed while executing code in the (?:current )?cell\b"  # VS Code
        r"|\bThe spark driver has stopped unexpectedly\b"  # Databricks
        # PyTorch's DataLoader and datasets' map reporting a child process gone, no cause.
        r"|\bDataLoader worker \(pids?(?:\(s\))? [\d, ]{1,80}\) exited unexpectedly\b"
        r"|\bOne of the subprocesses has ?abruptly died\b"
        r"|\bkernel (?:is )?restarting automatically\b"  # Jupyter's dialog, told
        r"|\bKernel Restarting\b"  # ... its title
        # ... or told: "the jupyter kernel dies", "causes the kernel to die".
        r"|\b(?:jupyter |jupter |the |my |notebook )kernell? (?:dies|died|crashes|crashed)\b"
        r"|\bkernel to die\b|\bcaus\w{0,3} (?:the )?kern[ae]ll? (?:to )?crash\b"
        # ... its message quoted ("I get \"Kernel has died\""); notebooks that "crash and
        # restart".
        r"|\bKernel has died\b|\b(?:kernel|notebook)s? (?:always |keeps? |kept )?crash(?:es|ed)? "
        r"and restart(?:s|ed)?\b"
        r"|\b(?:keeps? |kept )?crash(?:es|ed|ing) the kernel\b"
        # pytest-xdist replacing a worker that went away; a CI runner that stopped answering.
        r"|\bnode down: Not properly terminated\b|\breplacing crashed worker\b"
        r"|\bThe (?:self-)?hosted runner: [^\n]{1,80} lost communication with the server\b"
        r"|\b(?:get|got|getting|have|had) an? kernel crash\b|\bdying kernel\b"
        # YARN's SIGTERM with nobody named ("Killed by external signal"); a session or a
        # process that "gets killed" and nothing more.
        r"|\bKilled by external signal\b"
        # Ollama's runner, TorchServe's worker: "llama runner process has terminated: signal:
        # terminated", "'message': 'Worker died.'".
        r"|\brunner process has terminated: signal: terminated\b|\bWorker died\.(?=['\"\s]|$)"
        r"|\b(?:session|process|job|program|app|worker|kernel) (?:on [\w -]{1,30} )?gets killed\b"
        r"|\b(?:are|is|were|was|get|gets|got) silently killed\b"
        # Dask's scheduler giving up on a task whose workers all died.
        r"|\bKilledWorker: Attempted to run task\b|\ball those workers died while running it\b"
        # joblib's loky executor losing a worker, its stock list of causes after it.
        r"|\bA worker process managed by the executor was unexpectedly terminated\b"
        # Spark's lost executor, its stock list of causes after it; a process gone silently.
        r"|\bRemote RPC client disassociated\. Likely due to containers exceeding thresholds\b"
        r"|\bGradle build daemon disappeared unexpectedly\b"
        r"|\bprocess (?:was |got |gets |is )?killed without (?:an? |any )?(?:error )?"
        r"(?:message|output|trace)\b"
        # A program that stops with nothing printed: "Comfy crashes on stage load
        # checkpoint no error msg", "ComfyUI Crashes Without Error at ... Node".
        r"|^[^.\n]{0,60}?\bcrash(?:es|ed)?\b[^.\n]{0,60}?\bno error (?:msg|message|output)s?\b"
        r"|\bcrash(?:es|ed)? without (?:any |an )?(?:error|message)s?\b(?! dialog)",
        _I | re.MULTILINE,
    ),
    # A worker that exited with a status of its own (1, an ordinary error) was not killed;
    # "exit code None" is how Ray reports a process that ended on a signal.
    unless=_p(r"\bexit code (?!None\b)-?\d|\bexit(?:ed|s)? with code:? ?-?\d", _I),
)

# A launcher reporting its worker ended by SIGBUS ("exitcode: -7", "Signal 7 (SIGBUS)
# received by PID"), with nothing beside it that names shared memory or a data loader (those
# are /dev/shm, read first): the signal is known, its cause is not. Read as a worker's death.
BUS_ERROR_UNKNOWN = Family(
    "sigbus_cause_unknown",
    "killed_unknown",
    "medium",
    _p(
        r"\bexitcode\s{0,3}:\s{0,3}-7\b|\bSignal 7 \(SIGBUS\) received by PID\b"
        r"|\bexits with return code\s{0,3}=\s{0,3}-7\b"
        # Text Generation Inference's shard manager: "Shard process was signaled to shutdown
        # with signal 7".
        r"|\bsignaled to shutdown with signal 7\b"
        # UCX's handler inside a rank ("Caught signal 7 (Bus error: nonexistent physical
        # address)"), where NCCL is not named beside it (that one is /dev/shm).
        r"|\bCaught signal 7 \(Bus error\b",
        _I,
    ),
)

# macOS's kernel killing a process whose code pages fail their signature check: "CODE
# SIGNING: cs_invalid_page(…): … denying page sending SIGKILL", a crash report's
# "Namespace CODESIGNING" / "Code Signature Invalid". The shell then says "Killed: 9". And
# iOS's kill of a binary that lacks an entitlement it needs.
CODE_SIGNING_KILL = Family(
    "code_signing_kill",
    "not_oom",
    "high",
    _p(
        r"\bCODE SIGNING: (?:cs_invalid_page\b|process \d{1,10}\[[^\]\n]{0,80}\]: rejecting "
        r"invalid page\b)|\bNamespace CODESIGNING\b|\bCode Signature Invalid\b"
        # The kernel's log line and the verifier's error: "load code signature error 2 for
        # file", "errSecCSSignatureFailed", "CODESIGNING / \"Invalid Page\"".
        r"|\bload code signature error \d{1,4}\b|\berrSecCSSignatureFailed\b"
        r"|\bCODESIGNING\b[^\n]{0,10}?Invalid Page\b"
        # iOS killing a binary that lacks an entitlement it needs: "You're running from /var
        # and lack the `com.apple.private.security.no-container` entitlement".
        r"|\black(?:s|ing)? (?:the )?[`'\"]?com\.apple\.[\w.-]{1,80}[`'\"]? entitlement\b"
    ),
)

# A launcher tearing its workers down (DeepSpeed's sigkill_handler): the kill it reports is
# its own, after another failure.
LAUNCHER_TEARDOWN = _p(r"sigkill_handler\] Killing subprocess")

# A launcher tearing its workers down reports the exit status of the one that failed first:
# when that is not SIGKILL's (-9, 137), the workers' kill is the consequence, not the cause.
LAUNCHER_CHILD_EXIT = Family(
    "launcher_child_exit",
    "not_oom",
    "medium",
    _p(
        r"\] exits with return code = (?!-9\b|137\b)-?\d{1,4}\b"
        # SkyPilot's list of its nodes' return codes, one of them the worker's own failure
        # (the 137s are SkyPilot killing the others), or its sentence saying so.
        r"|\bfailed with return code list: \[[\d,\s]{0,60}?\b(?!137\b)[1-9]\d{0,2}\b"
        r"|\b(?:kill(?:s|ed)?|clean(?:s|ed)? up) the processes on (?:the )?other nodes\b"
    ),
)
