"""Host memory failures told in people's words: a reporter, a maintainer, a design note.

A host kill often reaches the thread not as the kernel's line but as a sentence: "the pod gets
killed by Kubernetes when memory crosses the defined limit", "I can confirm that the error is
caused by CPU OOM", "RAM usage is maxed and the notebook crashes", or the cure that worked
("I resized to 8gb and it worked"). Each family here reads one such way of telling it; a
hedge ("maybe", "could be", a list of theories) or the card's memory is not evidence. They are
tried after the reporters' own lines (oom_reported), so a machine's line names the verdict
when there is one. Patterns follow the bounds of *_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE


def told_in_prose(
    pattern: re.Pattern[str],
    *,
    near: re.Pattern[str] | None = None,
    span: int = 0,
    unless: re.Pattern[str] | None = None,
    unless_near: re.Pattern[str] | None = None,
    unless_span: int = 0,
) -> Family:
    """A host kill told in a sentence (memory_kill_in_prose), at medium confidence."""
    return Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        pattern,
        near=near,
        span=span,
        unless=unless,
        unless_near=unless_near,
        unless_span=unless_span,
        unless_in_sentence=True,
    )


TOLD_HOST_OOM: tuple[Family, ...] = (
    # The OOM killer named as what ended it, in a sentence: "The kernel OOM-killed 11 worker
    # processes", "was in a crash-loop due to OOMKilled". Not a guess or a question.
    told_in_prose(
        _p(
            r"\b(?:kernel|kubelet|system|OS|it|is|are|was|were|got|be|been|being|gets?) \*{0,2}"
            r"OOM[- ]?killed\b(?!\"?\s{0,3}[:=]\s{0,3}\"?(?:false|False)\b)"
            # A title: "Docker run yolov8 report error:Killed, OOM".
            r"|\bKilled,\s{0,2}OOM\b"
            # "The process gets killed by out-of-memory handler".
            r"|\bkilled by (?:the )?out[- ]of[- ]memory (?:handler|killer)\b"
            # "I encountered host OOM during actor loading"; a title "CPU OOM in training".
            r"|\b(?:encounter(?:ed|s)?|hit|hits|got|get|gets|ran into|run into|see|saw) "
            r"(?:a |an |the )?(?:host|CPU|system) OOM\b|^(?:CPU|Host|System|RAM) OOM\b"
            # "your system kills the process, as it consumes too much CPU memory".
            r"|\bkills? the process,? (?:as|because|since) it (?:consumes|uses|used|consumed) "
            r"too much (?:CPU |host |system )?(?:memory|RAM)\b"
            r"|\b(?:kernel|kubelet) OOM[- ]?killing\b"
            # "a pod that goes OOM" (the container's memory limit).
            r"|\b(?:pod|container)s? (?:that |which )?(?:goes|went|going|gone) OOM\b"
            r"|\bgets? (?:the |my |our )?(?:workload|process|job|container|pod|worker)s? "
            r"OOM[- ]?killed\b"
            r"|\b(?:the )?(?:Linux |kernel(?:'s)? |OS )?OOM[- ]?killer "
            # Ray's memory monitor, named as its log names it: "OOMKiller (Core component)".
            r"(?:\([\w ]{1,30}\) )?(?:(?:silently|quietly|then|just) )?"
            r"(?:terminat\w{1,4}|kill(?:s|ed|ing)|SIGKILLs|SIGKILLed)\b"
            r"|\bOOM\b[^\n]{0,30}?\bkilled the (?:\w{1,20} )?(?:worker|process|job|pod|container)\b"
            # "causes worker OOM kills", "k8s killing executor pods with OOM error".
            r"|\bcaus(?:es|ed|ing) (?:an? |the )?(?:worker |pod |container |process |executor )?"
            r"OOM[- ]?kills?\b"
            r"|\bkill(?:s|ed|ing) (?:\w{1,20} ){0,2}pods? with (?:an? )?OOM\b"
            r"|\b(?:crash[- ]?loop\w{0,3}|restart\w{0,3}|killed|dying|died|failing|failed)\b"
            r"[^\n]{0,30}?\b(?:due to|because of) (?:an? |the )?OOM[- ]?kill(?:ed|er|s)?\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA|TPU|HBM)\b|\b(?:maybe|might|may|perhaps|probably|possibly|could"
            r"|(?:un)?likely|if|whether|suspect|instead of|rather than|never|without|usually"
            r"|typically|generally|normally|commonly|should|would|expected to|almost always"
            r"|most often|in most cases)\b|\?",
            _I,
        ),
    ),
    # A reader's diagnosis that the process was killed for memory, confirmed by whoever ran
    # it: "This might be the process being killed because you're out of memory" then "Yup
    # that was it".
    told_in_prose(
        _p(
            r"\b(?:thanks?|thank you|yup|yes|yep|indeed)\b[^\n]{0,30}?\bthat was (?:it|the "
            r"(?:problem|issue|cause))\b",
            _I,
        ),
        near=_p(
            r"\bkill(?:ed|ing)? because (?:you(?:'re| are)|it(?:'s| is)|we(?:'re| are)"
            r"|I(?:'m| am)) (?:running )?out of (?:memory|RAM)\b",
            _I,
        ),
        span=3,
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b", _I),
    ),
    # Host memory seen growing and the kill by the OS that followed, in one line: "RAM
    # gradually increase during training and the process is killed by OS".
    told_in_prose(
        _p(
            r"\b(?:RAM|system memory|host memory)\b[^\n]{0,60}?\b(?:increas\w{0,4}|grow\w{0,4}"
            r"|climb\w{0,4}|fill\w{0,4})\b[^\n]{0,60}?\bkilled by (?:the )?(?:OS|system|kernel)\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps)\b|\?", _I),
    ),
    # Host memory named as a kill's cause by whoever ran it, or seen draining before the
    # system's kill: "This error is caused by a lack of memory", "The problem was my RAM is
    # not enough", "free memory drop down from 10G to 400M and system killed the training".
    # Not the card's memory, not a guess.
    told_in_prose(
        _p(
            # "The problem was my RAM is not enough" (said of a kill, by whoever ran it).
            r"\b(?:problem|issue|reason|cause) (?:was|is) (?:that )?(?:(?:my |the )?(?:RAM|memory)"
            r" (?:is|was) not enough|not having enough (?:memory|RAM))\b"
            # "it's maxing out to 15.5gb RAM and then running kill"; WSL's VM ("Vmmem usage
            # very high, after a while WSL2 killed the python script process").
            r"|\bmax(?:ing|es|ed)? out\b[^\n]{0,30}?\b(?:RAM|memory)\b[^\n]{0,40}?\bkill"
            r"|\bVmmem\b[^\n]{0,60}?\bkilled\b"
            # "free memory drop down from 10G to 400M and system killed the training".
            r"|\b(?:free|available) (?:memory|RAM)\b[^\n]{0,40}?\b(?:drop\w{0,4}|fell|falls"
            r"|decreas\w{0,4}|shrink\w{0,4})\b[^\n]{0,60}?\b(?:system|OS|kernel) kill(?:ed|s)\b"
            # "This error is caused by a lack of memory, because I used 20 million lines".
            r"|\b(?:is|was) caused by (?:a |the )?lack of (?:host |system )?(?:memory|RAM)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps|probably|likely)\b|\?",
            _I,
        ),
    ),
    # A restart or kill and its reason given as OOM: "the pod also restarted quite often and
    # the reason is OOM"; the OOM killer said to have been set off: "OOM killer was
    # triggered". Not the card's memory, not a guess.
    told_in_prose(
        _p(
            r"\b(?:restart\w{0,3}|kill(?:ed|s)|crash\w{0,4}|terminat\w{1,4}|died|dies)\b[^\n]{0,60}?"
            r"\b(?:the )?(?:reason|cause) (?:is|was|being) (?:an? )?OOM(?:[- ]?killed)?\b"
            r"|\bOOM[- ]killer (?:was|got|is|gets|has been) (?:triggered|invoked|activated)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps|probably|likely"
            r"|whether|suspect)\b|\?",
            _I,
        ),
    ),
    # A kill for OOM told in one sentence of a paragraph: "running this code kills the
    # container on OOM", "reaches its memory limit and is eventually killed due to OOM". A
    # paragraph pasted as one line asks its questions in other sentences, so only a hedge or
    # the card's memory in the kill's own sentence counts against it.
    told_in_prose(
        _p(
            r"\bkill(?:s|ed|ing) (?:the |my |our )?(?:container|process|kernel|worker|job|pod)s? "
            r"(?:on|due to|because of) (?:an? )?OOM\b"
            r"|\b(?:is|was|gets?|got|getting|being|been)(?: (?:my|the|our) (?:jobs?|runs?"
            r"|process(?:es)?|containers?|pods?|workers?))? (?:eventually |then |finally "
            r"|repeatedly )?killed (?:by (?:the )?(?:scheduler|system|OS|cluster|kernel|Slurm"
            r"|batch system) )?(?:due to|because of|for) (?:an? |the )?(?:(?:CPU |host |system "
            r"|RAM )?OOM|too much (?:memory|RAM)|excessive (?:memory|RAM)|high (?:memory|RAM))\b"
            # ... or named in a title: "blendergt killed because of memory usage".
            r"|^[^\n]{0,80}?\bkilled (?:due to|because of) (?:the |its )?(?:memory|RAM) "
            r"(?:usage|consumption|use)\b"
            # ... or the cause in brackets: "the process is killed (OOM)".
            r"|\b(?:is|was|gets?|got|being) killed \((?:OOM|out of memory)\)"
            # ... or the RAM watched past a size before it: "the RAM usage builds up beyond 30
            # GB and the process gets killed".
            r"|\b(?:RAM|memory)(?: usage)? (?:builds? up|grows?|increases?|climbs?)\b[^\n]{0,40}?"
            r"\b(?:beyond|over|past|above|to) \d{1,5} ?(?:[GT]i?B|G|GB)\b[^\n]{0,40}?"
            r"\b(?:gets?|got|is|was) killed\b"
            # ... or as the shell's word and its cause: 'Test killed because out of memory',
            # 'the terminal write "Killed" because out of memory for the RAM'.
            r"|\bkilled[\"'`]? because(?: of)? (?:an? |the )?(?:out of memory|OOM"
            r"|lack of memory)\b",
            _I,
        ),
        unless=_p(
            r"(?:\b(?:GPU|VRAM|CUDA)\b|\b(?:if|when|whenever|maybe|might|may|could|perhaps"
            r"|probably|possibly|likely|whether|suspect)\b)[^.?!\n]{0,80}?\bkill"
            r"|\bkill[^.?!\n]{0,60}?(?:\b(?:GPU|VRAM|CUDA)\b|\?)",
            _I,
        ),
    ),
    # The kill and its cause as the whole line, as a reporter pastes it: "killed out of
    # memory".
    told_in_prose(
        _p(
            r"^[\s`>*_\"']{0,8}killed (?:due to |because of |for )?(?:out of memory|OOM)\W{0,4}$",
            _I | re.MULTILINE,
        )
    ),
    # The OOM killer coming in and killing, in one sentence: "the linux oom killer kicks-in
    # and kill my shell". The OOM killer is the host's whatever GPU the sentence names; only
    # a hedge in the sentence counts against it.
    told_in_prose(
        _p(r"\bOOM[- ]killer (?:kicks?|kicked|kicking)[- ]in\b[^.?!\n]{0,40}?\bkill", _I),
        unless=_p(
            r"\b(?:if|when|whenever|maybe|might|may|could|perhaps|probably|possibly|likely"
            r"|whether|suspect)\b[^.?!\n]{0,120}?\bOOM[- ]killer",
            _I,
        ),
    ),
    # The host's memory run through by size, the card's named as not it: "The memory usage
    # (not GPU memory) increases gradually ... it runs out of 188GB memory".
    told_in_prose(
        _p(
            r"\b(?:ran|runs?|running) out of (?:the |its |all )?\d{1,5} ?[GT]i?B (?:of )?"
            r"(?:host |system )?(?:memory|RAM)\b",
            _I,
        ),
        unless=_p(
            r"(?<!not )\b(?:GPU|VRAM|CUDA)\b|\b(?:if|when|maybe|might|may|could|perhaps)\b", _I
        ),
    ),
    # A failure put down to using too much RAM, by whoever ran it: "This is due to an over
    # usage of the ram during compilation". A pasted paragraph asks its questions in other
    # sentences, so only a hedge or the card's memory in this sentence counts against it.
    told_in_prose(
        _p(
            r"\b(?:is|was) (?:due to|caused by) (?:an? |the )?(?:over[- ]?usage|overuse"
            r"|excessive use) of (?:the )?(?:RAM|host memory|system memory)\b",
            _I,
        ),
        unless=_p(
            r"(?:\b(?:GPU|VRAM|CUDA)\b|\b(?:if|when|maybe|might|may|could|perhaps|probably"
            r"|possibly|likely|whether|suspect|think)\b)[^.?!\n]{0,80}?\b(?:due to|caused by)"
            r"|\b(?:due to|caused by)[^.?!\n]{0,60}?(?:\b(?:GPU|VRAM|CUDA)\b|\?)",
            _I,
        ),
    ),
    # Memory seen full and the kill that followed, in one sentence: "the memory was
    # completely (99%+) used during load so it was killed".
    told_in_prose(
        _p(
            r"\b(?:RAM|memory)\b[^\n]{0,40}?\b(?:completely|fully|100 ?%|99 ?%\+?)[^\n]{0,40}?"
            r"\b(?:so|and|then) (?:it|the process|the program|the job) (?:was|got|gets|is) "
            r"killed\b"
            # "All my RAM filled, then my swap and finally the compilation got killed"; "RAM
            # usage grows until all 64 GB are consumed ... The process is then killed".
            r"|\b(?:RAM|memory)\b[^\n]{0,60}?\b(?:consumed|exhausted|filled|used up)\b"
            r"[^\n]{0,160}?\b(?:is|was|gets|got|being) (?:then |finally |eventually |just )?"
            r"killed\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps)\b", _I),
    ),
    # macOS's dialog when the machine's memory and swap are used up: "run out of application
    # memory" (it then pauses or ends applications, or logs the user out).
    told_in_prose(
        _p(r"\b(?:ran|runs?|running) out of application memory\b", _I),
        unless=_p(r"\b(?:if|when|whenever|maybe|might|may|could|perhaps)\b", _I),
    ),
    # Host memory running out and the OS killing the process for it, in one clause: "we run
    # out of system RAM and the OS kills the process to save itself". Not a condition.
    told_in_prose(
        _p(
            r"\b(?:ran|runs?|running) out of (?:system |host )?(?:RAM|memory)\b[^\n]{0,20}?"
            r"\band (?:then )?(?:the )?(?:OS|kernel|system) kill(?:s|ed)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:if|when|whenever|once|in case)\b[^\n]{0,30}?\b(?:ran|runs?|running) out of",
            _I,
        ),
    ),
    # A process that took all the RAM and was killed, in one sentence: "consuming all the
    # RAM on my machine (240GB) and then being killed by the kernel", "killed by the system
    # for using too much ram". Not the card's memory, not a condition or a guess.
    told_in_prose(
        _p(
            r"\b(?:consum\w{1,4}|eat\w{0,3}|us(?:ing|es|ed)|fill\w{0,3}|exhaust\w{0,4}|taking|took)"
            r" (?:up )?all (?:the |of the |my |of my )?(?:available )?(?:system )?(?:RAM|memory)\b"
            r"[^\n]{0,80}?\bkill(?:s|ed)?\b"
            r"|\bkilled\b[^\n]{0,80}?\bfor using too much (?:RAM|memory|system memory)\b"
            r"|\b(?:system|host) memory (?:blows up|blew up|explodes|exploded|spikes|spiked)\b"
            r"[^\n]{0,60}?\bkilled\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|video) (?:memory|RAM)\b|\bVRAM\b"
            r"|\b(?:if|when|whenever|maybe|might|may|could|perhaps)\b"
            r"[^\n]{0,40}?\b(?:consum|eat|us|fill|exhaust|tak|killed)"
            # ... nor an exit status's stock gloss: "Exit status 137 implies that the process
            # was killed for using too much memory".
            r"|\b(?:implies|means|indicates)\b[^\n]{0,60}?\bkilled\b",
            _I,
        ),
    ),
    # A process ended when it reached its memory limit, in one clause: "the running kernel is
    # restarted when it reach the memory limitation". Not a condition, not the card's memory.
    told_in_prose(
        _p(
            r"\b(?:restart\w{0,3}|kill(?:s|ed)|terminat\w{1,3}|dies|died|crash\w{0,3})\b"
            r"[^\n]{0,20}?\bwhen (?:it|the (?:kernel|process|container|job|pod|notebook)) "
            r"(?:reach(?:es|ed)?|hits?|exceed(?:s|ed)?) (?:the |its )?(?:memory|RAM) "
            r"limit\w{0,6}\b"
            # ... or runs out of it: "is killed when it goes out of ram".
            r"|\b(?:kill(?:s|ed)|terminat\w{1,3}|dies|died|crash\w{0,3})\b[^\n]{0,20}?\bwhen "
            r"(?:it|the (?:kernel|process|container|job|pod|notebook)) (?:goes|went|runs|ran) "
            r"out of (?:RAM|memory)\b"
            # ... or a title naming what is killed for it: "Scripts that exceed the memory
            # usage limit don't correctly indicate why they are killed".
            r"|\bexceed(?:s|ed|ing)? (?:the |its |their )?(?:memory|RAM)(?: usage)? limit\b"
            r"[^\n]{0,80}?\bkilled\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps|would)\b", _I),
    ),
    # ... the reason on the line after the kill: "got killed by the os(tried on windows)"
    # then "for using too much RAM".
    told_in_prose(
        _p(r"^\W{0,4}for using too much (?:RAM|memory|system memory)\b", _I | re.MULTILINE),
        near=_p(r"\bkilled\b", _I),
        span=1,
    ),
    # Host memory named as what ran out, beside the kill it caused: "OOM of CPU memory" and
    # "it causes my program killed".
    told_in_prose(
        _p(r"\bOOM (?:of|on|in) (?:the )?(?:CPU|host|system) (?:memory|RAM)\b", _I),
        near=_p(r"\bkill(?:s|ed)?\b", _I),
        span=8,
    ),
    # An operator's sentence that a pod or process ran out of memory and was killed: "the
    # exporter pod runs out of memory about every hour and is killed with code 137". Not when
    # the GPU is what ran out, and not a conditional ("if the pod runs out of memory ...").
    told_in_prose(
        _p(
            r"\b(?:pod|container|process|job|task|worker)s?\b[^\n]{0,60}?"
            r"\b(?:runs?|ran|running) out of memory\b[^\n]{0,120}?"
            r"\b(?:killed|OOMKilled|exit(?:s|ed)? with (?:code |status )?137)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b[^\n]{0,20}?\bout of memory\b"
            r"|\b(?:if|when|whenever|once|in case)\b[^\n]{0,40}?\b(?:runs?|ran) out of memory\b",
            _I,
        ),
    ),
    # An operator who brought the OOM about by setting a container's memory ("reducing the
    # memory to 500Mi ... can reproduce the OOM error"), beside the kill's exit code 137.
    told_in_prose(
        _p(
            r"\b(?:reduc|lower|decreas|limit|set)\w{0,4}\b[^\n]{0,30}?\bmemory\b[^\n]{0,20}?"
            r"\b(?:to|of|at) \d{1,6} ?(?:[KMG]i|[KMG]iB|[KMG]B)\b[^\n]{0,80}?\bOOM\b"
            r"|\bOOM\b[^\n]{0,80}?\b(?:reduc|lower|decreas|limit|set)\w{0,4}\b[^\n]{0,30}?"
            r"\bmemory\b[^\n]{0,20}?\b(?:to|of|at) \d{1,6} ?(?:[KMG]i|[KMG]iB|[KMG]B)\b",
            _I,
        ),
        near=_p(r"\bexit ?Code:? 137\b|\bexit(?:ed)? (?:with )?(?:code |status )?137\b", _I),
        span=30,
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b[^\n]{0,30}?\bOOM\b|\bOOM\b[^\n]{0,30}?\b(?:GPU|CUDA)\b", _I
        ),
    ),
    # A kill that giving the container more memory cured: "I solved this 'killed' problem by
    # adding --memory=\"16g\" to the docker command".
    told_in_prose(
        _p(
            r"\b(?:solved|fixed|resolved|cured)\b[^\n]{0,60}?\bkill(?:ed|s)?\b[^\n]{0,100}?"
            r"(?:--memory|--memory-limit|\bmem_limit)\s{0,2}[= :]\s{0,2}[\"']?\d{1,6}\s?[kKmMgG]",
            _I,
        ),
    ),
    # An out-of-memory and the SIGKILL it brought, in one sentence: "an 'OutOfMemory' issue,
    # resulting in the process being killed by SIGKILL (signal 9)".
    told_in_prose(
        _p(
            r"\b(?:OutOfMemory|out[- ]of[- ]memory|OOM)\b[^\n]{0,80}?"
            r"\b(?:killed by (?:SIGKILL|signal 9)|SIGKILL(?:ed)?\b)",
            _I,
        ),
        # Nor the two told apart: "137 doesn't mean OOM. It means terminated by SIGKILL, which
        # usually happens because of OOM killer".
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b|\b(?:maybe|might|may|perhaps|probably|if|whether|usually"
            r"|typically|generally)\b|\?"
            r"|\b(?:doesn't|does not|don't|do not|isn't|is not) (?:always |necessarily )?"
            r"(?:mean |imply )?(?:an? )?(?:OOM|out[- ]of[- ]memory)\b",
            _I,
        ),
    ),
    # RAM watched climbing past its size beside the kill: "the training was interrupted when
    # the memory was over 100%" a few lines from "exit code 137".
    told_in_prose(
        _p(
            r"\b(?:RAM|memory)\b[^\n]{0,30}?\b(?:over|above|reached|hit|at) 100 ?%"
            # ... or the memory left falling to nothing: "dropping to 0% available memory".
            r"|\b(?:dropping|dropped|drops|fell|falls|falling|down) to 0 ?% (?:available|free)\b",
            _I,
        ),
        near=_p(r"\bSIGKILL\b|\bsignal:? 9\b|\bexit code:? (?:137|-9)\b|\bKilled\b", _I),
        span=8,
        unless=_p(r"\b(?:GPU|VRAM|CUDA|video)\b|\b(?:if|maybe|might|may)\b", _I),
    ),
    # A cgroup limit crossed and the kill, told in one sentence: "total RSS crosses the cgroup
    # limit and the kernel SIGKILLs the pod with exit 137".
    told_in_prose(
        _p(
            r"\b(?:RSS|memory|usage)\b[^\n]{0,40}?\b(?:crosses|crossed|exceeds|exceeded|hits|hit"
            r"|reaches|reached) (?:the |its )?(?:cgroup|container|pod)(?:'s)? (?:memory )?limit\b"
            r"[^\n]{0,80}?(?:\bSIGKILL|\bkill(?:s|ed)?\b|\b137\b|\bOOM)",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bmemory\b|\b(?:if|whenever)\b", _I),
    ),
)
