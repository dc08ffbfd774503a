"""Host memory failures told by the services and machines a job ran on, in people's words.

The notebook service that says it ran out of RAM, the VM or runner said to have run out, the
orchestrator that killed a pod when its memory crossed the limit, the host's log quoted beside
a SIGKILL, the kernel's OOM reaper named in a sentence, and the host's memory confirmed as the
cause ("it's a CPU OOM"). Read after the sentences of told.py, in the same way: a hedge or the
card's memory is not evidence. Patterns follow the bounds of *_families: literals and bounded
repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.told import told_in_prose


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# The card's memory, or a guess: not a host kill told.
_HEDGE = _p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps|whether)\b|\?", _I)

TOLD_BY_SERVICES: tuple[Family, ...] = (
    # A notebook service's words for its RAM used up: "it says ran out of RAM". Not a guess
    # at a kill's cause ("could be … running out of RAM", "most likely running out of system
    # memory").
    Family(
        "notebook_memory_exhausted",
        "host_oom_killed",
        "medium",
        _p(r"\b(?:ran|runs?|running) out of (?:RAM|system RAM|system memory|host memory)\b"),
        # Nor what a kill usually means, said in general: "`killed` usually means you ran out
        # of system memory".
        unless=_p(
            r"\b(?:could|might|may|maybe|perhaps|possibly|possible|probably|likely|if|whether"
            r"|usually|typically|generally|often|guess)\b",
            _I,
        ),
    ),
    # The OOM killer's kills named as what happens: "getting oom kills even with 20GB RAM".
    # Not what a setting avoids, nor a question.
    told_in_prose(
        _p(
            r"\b(?:getting|get|gets|got|seeing|see|saw|hitting|hit|having|had) "
            r"(?:an? |the |more |frequent |repeated |constant )?(?:OOM|out[- ]of[- ]memory)[- ]?"
            r"kill(?:s|ed)?\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b|\b(?:avoid|prevent|without|never|no longer|if|whether|could"
            r"|might|maybe)\b|\?",
            _I,
        ),
    ),
    # ... or the machine the notebook or job ran on, said to have run out of memory: "Binder
    # instance ran out of memory", "the runner VM ran out of memory". Not the card's memory,
    # not a conditional or a guess.
    Family(
        "notebook_memory_exhausted",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:Binder|Colab|Kaggle|JupyterHub|notebook|instance|VM|machine|server|node"
            r"|runner|host)\b (?:(?:instance|server|VM|kernel) )?(?:ran|has run|had run) out of "
            r"memory\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM|device)\b|\b(?:if|when|whether|maybe|might|may|could|perhaps"
            r"|probably|guess|suspect)\b",
            _I,
        ),
    ),
    # RAM filled up, and the notebook or process crashing or killed in the same sentence:
    # "the ram usage is maxed and the notebook crashes".
    Family(
        "notebook_memory_exhausted",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?:RAM|system memory|host memory)(?: usage)? (?:is |was |gets |got |goes |went )?"
            r"(?:maxed|full|at 100 ?%|100 ?%)[^\n]{0,60}?"
            r"\b(?:crash\w{0,3}|killed|dies|died|restart\w{0,3})\b",
            _I,
        ),
        # Not the card's RAM ("GPU RAM is full"), nor advice ("if the RAM is full ...").
        unless=_p(
            r"\b(?:GPU|VRAM|video|CUDA)\s?(?:RAM|memory)\b|\bif (?:the )?(?:RAM|memory)\b", _I
        ),
    ),
    # What a host's log said of a SIGKILL, told beside it: "the pycharm tips are 'interrupted
    # by signal 9: sigkill'. I check my log in linux and it said cpu out of memory", "the
    # system logs indicate that the process is terminated due to insufficient memory".
    told_in_prose(
        _p(
            r"\b(?:logs?|dmesg|journal(?:ctl)?|syslog|kern\.log)\b[^\n]{0,60}?"
            r"\b(?:said|says|say|shows?|showed|indicates?|indicated|reports?|reported|stating"
            r"|states?|stated|saying)\b"
            r"[^\n]{0,40}?(?:\b(?:CPU|RAM|host|system) (?:is |was |went |ran )?out of memory\b"
            # "a log in `dmesg` stating that the reason is "out of memory"".
            r"|\breason (?:is|was) [\"'`]?(?:out of memory|OOM)\b"
            r"|\b(?:terminated|killed) (?:due to|because of|for) (?:insufficient|not enough"
            r"|lack of|low) (?:memory|RAM)\b)",
            _I,
        ),
        near=_p(
            r"\bSIGKILL\b|\bsignal:? 9\b|exitcode:? -9\b|\bexit code:? (?:137|-9)\b|\bKilled\b",
            _I,
        ),
        span=8,
        # Not the card's memory, nor a guess at the cause.
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bout of memory"
            r"|\b(?:maybe|might be|may be|perhaps|probably|if)\b[^\n]{0,40}?"
            r"\b(?:out of memory|insufficient memory)",
            _I,
        ),
    ),
    # A kill by the orchestrator told with its cause in one sentence: "Container is killed by
    # Kubernetes when memory crosses the defined limit".
    told_in_prose(
        _p(
            r"\bkilled by (?:Kubernetes|k8s|the kubelet|kubelet|Docker|the container runtime)\b"
            r"[^\n]{0,40}?\b(?:when|as|because|once)\b[^\n]{0,20}?\bmemory\b[^\n]{0,20}?"
            r"\b(?:crosses|crossed|exceeds|exceeded|goes over|went over|hits|hit|reaches|reached)"
            r" (?:the |its )?(?:defined |configured |set |memory )?limit\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b[^\n]{0,20}?\bmemory\b", _I),
    ),
    # A pod or worker killed because of an OOM, said in a sentence: "When a POD gets killed
    # by K8S because of OOM", "worker crashes due to out of memory (OOME)".
    told_in_prose(
        _p(
            r"\b(?:pod|container|worker|process|task|job)s?\b[^\n]{0,40}?"
            r"\b(?:killed|crash(?:es|ed)?|dies|died|terminated)\b[^\n]{0,40}?"
            r"\b(?:because of|due to) (?:an? )?(?:OOM|OOME|out of memory)\b"
            # ... or the other way round: "running out of memory and causing python processes
            # getting killed".
            r"|\b(?:(?:run(?:ning|s)?|ran) out of memory|(?:memory|RAM) is not enough)\b"
            r"[^\n]{0,60}?"
            r"\b(?:causing|and|which|then|so)\b[^\n]{0,40}?\b(?:gets?|getting|got|being|been|be)"
            r" killed\b"
            # ... or with what killed it first: "when OS kill uwsgi because of OOM".
            r"|\b(?:the )?(?:OS|kernel|system|Linux|kubelet|Kubernetes|k8s|Docker)"
            r" (?:kills?|killed|killing)\b[^\n]{0,40}?\b(?:because of|due to) (?:an? )?"
            r"(?:OOM|OOME|out of memory)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|CUDA|VRAM)\b|\b(?:if|when(?!ever)|in case)\b[^\n]{0,20}?\b(?:it|the)\b"
            r"[^\n]{0,30}?\bmight\b|\b(?:could|might|may) be\b",
            _I,
        ),
    ),
    # The kernel's OOM reaper named as what stopped the work, or its lines seen in the syslog
    # ("jobs are stopped by `oom_reaper`", "lots of `oom_reaper` messages"): it frees the
    # memory of a process the OOM killer has just killed.
    told_in_prose(
        _p(
            r"\b(?:stopped|killed|terminated|reaped) by [`'\"]?oom_reaper\b"
            # ... or a count of what a limit OOM-killed: "640Mi OOM-killed 39 mounts".
            r"|\bOOM[- ]killed (?:\d{1,6}|several|many|multiple|dozens of|hundreds of) \w"
            r"|\boom_reaper[`'\"]? (?:messages|lines|entries|logs?)\b",
            _I,
        ),
    ),
    # The host's memory named as the cause, in a sentence: "I can confirm that the error is
    # caused by CPU OOM", "Root cause: host cgroup OOM, not VRAM". The card's memory may be
    # named too (as what it was not); a hedge is not a cause.
    told_in_prose(
        _p(
            r"\b(?:is|was|were) caused by (?:a |an |the )?(?:CPU|host|system|RAM|container|cgroup)"
            r"(?: memory| RAM| cgroup)? (?:OOM|out of memory)\b"
            r"|\broot cause\W{1,6}(?:(?:is|was) )?(?:a |an |the )?(?:host|container|node|system)"
            r"(?: cgroup| memory)? (?:OOM|out of memory)\b"
            # "This is the kernel OOM killer, not a compiler bug", "exited with return code -9
            # due to RAM", "because of a lack of RAM".
            r"|\b(?:this|it) (?:is|was) the (?:kernel(?:'s)? |Linux )?OOM[- ]killer\b"
            r"|\b(?:code|status) (?:-9|137) due to RAM\b"
            # "here it's an out-of-memory kill, not a network problem".
            r"|\b(?:it's|it is|it was|this is|this was|that's|that was) an? "
            r"(?:out[- ]of[- ]memory|OOM)[- ]kill\b"
            r"|\b(?:because of|due to) (?:a )?lack of RAM\b"
            # "The problem is that system RAM ( not vram) is running out of memory."
            r"|\b(?:system|host|CPU) RAM\b[^.\n]{0,20}?\bis (?:running|run) out of memory\b"
            # "there's no error message per se because it's a CPU oom -- the job just crashes".
            r"|\b(?:it's|it is|it was|this is|that's) (?:a |an )?(?:CPU|host|system RAM) OOM\b",
            _I,
        ),
        # ... nor a cause asked about: "silently killed by Docker daemon (due to lack of RAM?)".
        unless=_p(
            r"\b(?:if|whether|might|may|could|maybe|probably|perhaps|check)\b"
            r"|\black of RAM\?",
            _I,
        ),
    ),
    # A notebook session said to crash with its RAM used up: "Colab notebook crashes due to
    # RAM overuse", "the notebook consumed all available RAM, leading to a session crash",
    # "Session Crashing: exhausted RAM", "reporting that all RAM has been consumed".
    told_in_prose(
        _p(
            r"\b(?:notebook|session|kernel|runtime|Colab|Kaggle)\b[^\n]{0,40}?\bcrash\w{0,4}\b"
            r"[^\n]{0,30}?\b(?:due to|because of|from|after|for) (?:the )?(?:RAM|memory) "
            r"(?:overuse|exhaustion|overflow)\b"
            r"|\b(?:consumed|used up|exhausted|used|ate|eaten) (?:up )?(?:all |the ){0,2}"
            r"(?:available )?(?:RAM|system memory)\b[^\n]{0,40}?"
            r"\b(?:session |kernel |notebook |runtime )?crash"
            r"|\b(?:session|notebook|kernel|runtime)s? (?:keeps? )?crash\w{0,4}\b[^\n]{0,60}?"
            r"\b(?:exhaust\w{0,4}|consum\w{0,4}|used up|using all) (?:all |the ){0,2}"
            r"(?:available )?RAM\b"
            r"|\ball (?:the )?(?:available )?RAM (?:has|had) been (?:consumed|used)\b"
            # ... or by a program: "its memory usage still spiked and consumed all of my
            # system memory"; "You don't have enough system RAM for unquantized Flux".
            r"|\b(?:consumed|used up|ate up|eats up|eating up|exhausted) all (?:of )?(?:my |the )?"
            r"(?:available )?(?:system|host) memory\b"
            r"|\b(?:you|we|I) (?:don't|do not|didn't|did not) have enough (?:system|host|CPU) "
            r"(?:RAM|memory)\b",
            _I,
        ),
        unless=_HEDGE,
    ),
    # RAM, not the card, named as what ran out: "I would get OOM (RAM not VRAM)", "causing
    # RAM OOMs, resulting in a complete system failure".
    told_in_prose(
        _p(
            r"\bOOM\s?\((?:CPU |host |system )?RAM\b"
            r"|\b(?:caus\w{1,4}|hit\w{0,3}|get\w{0,4}|got|having|see|saw) (?:a |an )?"
            r"(?:RAM|CPU|host|system) OOMs?\b"
            # "Then I get OOM when rank 2 starts and memory consumption reaches 128GB (on the
            # CPU)".
            r"|\bOOM\b[^\n]{0,100}?\b(?:reach(?:es|ed)|hits?) \d{1,5} ?(?:GB|G|GiB)\b[^\n]{0,12}?"
            r"\((?:on )?the CPU\)",
            _I,
        ),
        # A hedge in the same sentence before the OOM, or its sentence a question (people
        # paste paragraphs as one line).
        unless=_p(
            r"\b(?:if|whether|maybe|might|may|could|perhaps)\b[^.!?\n]{0,60}?\bOOM\b"
            r"|\bOOMs?\b[^.!?\n]{0,80}?\?",
            _I,
        ),
    ),
    # The orchestrator or kernel named as what OOM-killed the server: "triton server is
    # oom-killed by k8s(linux kernel)". A hedge counts only within the same sentence.
    told_in_prose(
        _p(
            r"\b(?:is|was|got|gets|been) oom[- ]killed by (?:the )?(?:k8s|kubernetes|kubelet"
            r"|(?:linux )?kernel|linux|OS)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b[^.!?\n]{0,60}?\boom[- ]killed by\b"
            r"|\b(?:if|whether|maybe|might|may|could|perhaps)\b[^.!?\n]{0,60}?\boom[- ]killed by\b",
            _I,
        ),
    ),
    # A pod or container said to have been OOMed: "my head pod doesn't restart after OOMed".
    told_in_prose(
        _p(
            r"\b(?:pods?|containers?)\b[^\n]{0,40}?\b(?:after|was|is|got|gets|been|being|once)"
            r" (?:it )?(?:got |gets |was |is |being )?OOM(?:ed|'d)\b",
            _I,
        ),
        # ... not what googling suggested ("Best I can tell from googling ... is being OOMed").
        unless=_p(
            rf"{_HEDGE.pattern}|\b(?:best I can tell|googling|seems?|appears?|guess|suspect"
            r"|think|probably|likely|possibly)\b",
            _I,
        ),
    ),
    # A container's memory limit found too small for the work: "The max memory limit of
    # 512mb was too small for this operation".
    told_in_prose(
        _p(
            r"\b(?:memory|mem|RAM) limit (?:of \S{1,12} )?(?:was|is|were|are) (?:too (?:small|low)"
            r"|not (?:enough|sufficient|big enough))\b",
            _I,
        ),
        unless=_HEDGE,
    ),
    # A batch job killed at its limit, the limit a memory one by what is set beside it: "my
    # jobs are always killed because they reached the upper limit" by "process.memory".
    told_in_prose(
        _p(
            r"\bkilled because (?:they|it|the jobs?) (?:reached|exceeded|hit|went over) "
            r"(?:the |their |its )?(?:upper |memory |mem )?limit\b",
            _I,
        ),
        near=_p(r"\bmem(?:ory)?\b|#BSUB -M\b|--mem\b", _I),
        span=6,
        unless=_HEDGE,
    ),
    # A program that only uses the host's memory said to run out of it or eat it up: "Then
    # vaex running out of memory", "polars still eat up my memory and crash vscode", "cargo
    # will run out of memory and crash"; and what the box did about it: "killed by YARN",
    # "eventually are killed OOM", "memory usage exceeded the allocated 1.4GB of RAM, causing
    # the system to trigger a SIGKILL", "The Jenkins server is running out of memory and
    # killing its build host slaves", "unable to locate (6.35) GB of memory".
    told_in_prose(
        _p(
            r"\b(?:vaex|pandas|polars|numpy|duckdb|pyarrow|dask|pyspark|spark|sklearn|umap|cargo"
            r"|rustc|gcc|g\+\+|clang|the linker|ld|webpack)\b[^\n]{0,20}?"
            r"\b(?:is |was |will |would )?"
            r"(?:(?:running|ran|runs|run) out of (?:memory|RAM)"
            r"|(?:eats?|ate|eating) up (?:all )?(?:my |the )?(?:memory|RAM)"
            r"|(?:running|using|uses|used) more than 100 ?% of (?:the )?(?:memory|RAM))\b"
            r"|\b(?:got |gets |was |is |were |are |been |being )?killed by (?:the )?YARN\b"
            r"|\b(?:are|were|is|was|gets?|got|being) killed (?:by )?OOM\b"
            r"|\b(?:memory|RAM)(?: usage)? exceed(?:ed|s)\b[^\n]{0,50}?\b(?:causing|caused|so)\b"
            r"[^\n]{0,40}?\b(?:SIGKILL|killed|kill)\b"
            r"|\brunning out of (?:memory|RAM) and (?:killing|kills|killed)\b"
            r"|\bunable to (?:locate|allocate) \(?[\d.]{1,8}\)? ?(?:GB|GiB|G) of (?:memory|RAM)\b",
            _I,
        ),
        # The card named anywhere; a hedge before the words or a question after them, in
        # their own sentence (people paste paragraphs as one line).
        unless=_p(
            r"\b(?:GPU|VRAM|CUDA)\b"
            r"|\b(?:if|maybe|might|may|could|perhaps|whether)\b[^.!?\n]{0,80}?\b(?:out of "
            r"(?:memory|RAM)|eat\w{0,3} up|more than 100|killed|exceed\w{0,2}|unable to)\b"
            r"|\b(?:out of (?:memory|RAM)|killed|exceeded)\b[^.!?\n]{0,80}?\?",
            _I,
        ),
        # A JavaScript build running out of memory with V8's heap limit beside it: the
        # runtime's own cap (not_memory_limits), not the host's memory.
        unless_near=_p(r"JavaScript heap out of memory|--max-old-space-size|Reached heap limit"),
        unless_span=12,
    ),
    # The host's memory named full, whatever the card did: "the host RAM usage keeps growing
    # until it reaches 62 GiB (100 %)", "IsaacLab used all of my machine's DRAM (about 100GB)
    # and crashed", "hitting an OOM, with 128G of host RAM", "save checkpoint时CPU OOM". A
    # hedge counts in its own sentence.
    told_in_prose(
        _p(
            r"\b(?:host|system) (?:RAM|memory)(?: usage)?\b[^\n]{0,60}?\b(?:reaches|reached|hits"
            r"|hit) [^\n]{0,20}?\(?100 ?%"
            r"|\bused all (?:of )?(?:my |the )?(?:machine's |system's |host's )?(?:DRAM|RAM)\b"
            r"[^\n]{0,40}?\bcrash"
            r"|\bOOM\b[^\n]{0,20}?\bwith \d{1,4} ?(?:G|GB|GiB) of (?:host|system|CPU) RAM\b"
            # "CPU memory utilization grows with training and finally cause OOM"; "My CPU RAM
            # (not GPU) usage is increasing continuously ... hence system crashes"; "linux kernel
            # decided to kill a process when it went above allowed memory threshold".
            r"|\b(?:CPU|host|system) (?:memory|RAM)(?: utilization| usage)? (?:grows|grew|increases"
            r"|keeps growing)\b[^\n]{0,60}?\b(?:cause|causes|caused|leads? to)\b[^\n]{0,20}?\bOOM\b"
            r"|\bCPU RAM\b[^\n]{0,60}?\bincreasing\b[^\n]{0,200}?"
            r"\b(?:system crash\w{0,2}|crash(?:es|ed))\b"
            r"|\bkill(?:ed|s)? (?:a |the )?process when it (?:went|goes|got|gets) (?:above|over) "
            r"(?:the |its )?(?:allowed )?memory (?:threshold|limit)\b"
            r"|(?:\u65f6|\u6642)\s?(?:CPU|host) OOM\b",
            _I,
        ),
        unless=_p(
            r"\b(?:if|whether|maybe|might|may|could|perhaps)\b[^.!?\n]{0,60}?\b(?:RAM|OOM|DRAM)\b"
            r"|\b(?:RAM|OOM|DRAM)\b[^.!?\n]{0,60}?\?",
            _I,
        ),
    ),
    # A rank, job or task said to die of running out of memory, no card named: "If an MPI
    # rank dies due to an out of memory error", "they are kicked out with `out of memory`
    # error message". (An "if" here states the trouble, as an issue's first line does.)
    told_in_prose(
        _p(
            r"\b(?:rank|job|task|process)(?:s|es)?\b[^\n]{0,20}?\b(?:dies|died|die"
            r"|(?:are|were|was|is|get|gets|got) (?:kicked out|killed))\b "
            r"(?:due to|because of|with|from|by) (?:an? )?[`'\"]?(?:out[- ]of[- ]memory|OOM)\b",
            _I,
        ),
        unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\b(?:maybe|might|perhaps|could|whether)\b|\?", _I),
    ),
)
