"""Host kills told by their cause, in people's words, and the system lines that say so.

A kill, a crash or a dead kernel put down to the host's memory by whoever saw it: "kills the
container", "crashes because it consumes too much memory", "the kernel dies bc there's not
enough RAM", "the cause of the kill was the OOM-Killer", "processes killed due to
Out-of-Memory"; memory seen at its ceiling with the crash it caused; macOS's own kill for want
of swap. Read after told.py's and told_services.py's sentences, in the same way: a hedge or
the card's memory in the same sentence is not evidence. Patterns follow the bounds of
*_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family
from gpubot.knowledge.oom.told import told_in_prose


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE
# The card's memory, or a guess, in the sentence: not a host kill told.
_HEDGE = _p(
    r"(?:\b(?:GPU|VRAM|CUDA)\b|\b(?:if|maybe|might|may|could|perhaps|probably|possibly"
    r"|possible|likely|whether|suspect\w{0,2}|guess|think|certainly|surely|pretty sure"
    r"|looks? like (?:it|they) (?:was|were|is|are))\b)"
    r"[^.!?\n]{0,80}?"
    r"\b(?:kill|crash|die|died|dies"
    r"|OOM|memory|RAM)"
    r"|\b(?:kill|crash|die|died|dies|OOM|memory|RAM)\w{0,4}\b[^.!?\n]{0,80}?(?:\b(?:GPU|VRAM"
    r"|CUDA)\b|\?)",
    _I,
)

TOLD_CAUSES: tuple[Family, ...] = (
    # The kill, crash or death and its cause in one sentence: "eventually kills the
    # container", "it killed the compute instance because of memory issue", "the container
    # frequently crashes because it consumes too much memory", "the kernel dies bc there's
    # not enough RAM", "Kernel dies (ungracefully) on import from out-of-memory condition",
    # "the cause of the kill was the OOM-Killer", "getting processes killed due to
    # Out-of-Memory (OOM)".
    told_in_prose(
        _p(
            r"\b(?:memory|RAM)(?: usage)? (?:increases|grows|rises|climbs|keeps growing)\b"
            r"[^\n]{0,40}?\b(?:eventually|finally|then|until it) kills? (?:the |my |our )?"
            r"(?:container|process|pod|worker|job|kernel)\b"
            r"|\bkill(?:s|ed)? (?:the |my |our )?(?:\w{1,20} )?(?:instance|container|process|pod"
            r"|worker|job|VM|node|machine)s? (?:because of|due to) (?:a |the )?memory issues?\b"
            r"|\b(?:crash(?:es|ed)?|dies|died|(?:is|was|gets|got|being) killed) (?:\w{1,12} ){0,2}"
            r"because (?:it|they|the process|the container) (?:is |are |was |were )?"
            r"(?:consum\w{1,4}|us(?:es|ed|ing)|tak(?:es|ing)|took) to{1,2} much "
            r"(?:host |system |CPU )?(?:memory|RAM)\b"
            # "exit with code 137 under memory pressure".
            r"|\b(?:exit(?:ed|s)?|killed|died|crash\w{0,3})\b[^\n]{0,40}?\bunder memory pressure\b"
            # "It was running too fast and running out of memory. Since it used ~70GB".
            r"|\brunning out of memory\b[^\n]{0,40}?\bused ~?\d{1,4} ?GB\b"
            r"|\b(?:kernel|process|container|it|training|job) (?:dies|died|crashes|crashed"
            r"|(?:is|was|gets|got) killed) (?:bc|because|since|as) (?:there(?:'s| is| was)"
            r"|it (?:ran|runs)|we (?:ran|run)|I (?:ran|run)) (?:not enough|no more|out of) "
            r"(?:RAM|memory)\b"
            r"|\bkernel (?:dies|died|death|crash\w{0,3})\b[^\n]{0,60}?\b(?:from|due to|because of)"
            r" (?:an? |the )?out[- ]of[- ]memory\b"
            r"|\b(?:cause|reason) (?:of|for) the (?:kill|crash|death)s? (?:was|is) (?:the )?"
            r"(?:Linux |kernel(?:'s)? )?OOM[- ]?Killer\b"
            r"|\b(?:process(?:es)?|jobs?|pods?|containers?|workers?) (?:being |getting )?killed "
            r"(?:due to|because of) (?:an? )?out[- ]of[- ]memory\b"
            r"|\b(?:It|this|that) (?:was|is) caused by (?:ran|running|run)[- ]out[- ]of[- ]"
            r"(?:memory|RAM)\b"
            # "YARN killing execution containers for exceeding memory limits"; "it was killed
            # by the kubelet since it consumed too much memory".
            r"|\bkill(?:ing|s|ed) (?:\w{1,20} ){0,2}containers? for exceeding (?:their |its )?"
            r"memory limits?\b"
            r"|\b(?:is|was|gets|got) killed by the (?:kubelet|kernel|system|OS|scheduler) "
            r"(?:because|since|as) (?:it|they) (?:consumes|consumed|uses|used) too much "
            r"(?:memory|RAM)\b"
            # A title: "OOM with 64G ram and 13B model".
            r"|^[^\n]{0,20}?\bOOM with \d{1,4} ?(?:G|GB|GiB) (?:of )?(?:host |system |CPU )?RAM\b"
            # A title: "Memory Exhaustion and Multiprocessing Crash in ...".
            r"|^[^\n]{0,60}?\b(?:Host |System |RAM )?Memory Exhaustion\b[^\n]{0,60}?\bCrash",
            _I,
        ),
        unless=_HEDGE,
    ),
    # The host's memory at its ceiling with the crash it caused, told: "my ram get 100%
    # quickly and causes comfy to crash", "System crashes when loading couple of big models
    # because of RAM filling up", "causing my Ram to crash and making the machine run out of
    # memory", "Docker killing one of the instances when the limit is exceeded" of RAM.
    told_in_prose(
        _p(
            r"\b(?:RAM|memory)\b (?:gets?|goes|went|reach(?:es|ed)?|hits?) (?:to )?100 ?%"
            r"[^\n]{0,40}?\bcaus\w{1,3} [^\n]{0,30}?\bcrash"
            r"|\bcrash\w{0,3}\b[^\n]{0,60}?\bbecause of (?:the )?(?:RAM|memory) (?:filling up"
            r"|running out|being full)\b"
            r"|\bmak(?:ing|es) the (?:machine|system|computer|server|host) run out of "
            r"(?:memory|RAM)\b"
            r"|\b(?:RAM|memory)\b[^\n]{0,240}?\bkill(?:ing|s|ed) (?:one of )?(?:the )?"
            r"(?:instances?|containers?|process(?:es)?)\b[^\n]{0,20}?\bwhen the (?:memory )?"
            r"limit is (?:exceeded|reached|hit)\b",
            _I,
        ),
        unless=_HEDGE,
    ),
    # A kill or failure put down to memory by what ended it or how: "DuckDB: failed with OOM
    # killer", "bedGraphToBigwig killed, cgroup out-of-memory handler", "gemma 3 OOM: Killed
    # process", "When a Celery worker exceeds its memory limit, it encounters an Out-Of-Memory
    # (OOM) error and restarts", "when reaching memory limit, the whole jupyter server dies",
    # "killed by controller because it is out of memory", "without ~100-200gb of ram triggers
    # OOM kills", "a task that produces a container OOM error", "failing with an INTERNAL
    # error ... due to the instance running low on RAM", "batch job container has been failing
    # on out of memory", "my process is killed due to insufficient memory", "After using up 1
    # GB of memory on JupyterHub, the kernel fails", a title "cpu memory exceed during training".
    told_in_prose(
        _p(
            r"\b(?:failed|died|crashed) (?:with|by) (?:the )?(?:Linux |kernel )?"
            r"OOM[- ]?killer\b"
            r"|\bkilled,? (?:by )?(?:the )?cgroup out-of-memory handler\b"
            r"|\bOOM:\s{0,2}Killed process\b"
            r"|\b(?:exceeds?|exceeded|exceeding|reach(?:es|ed|ing)?|hits?|hitting) (?:its |their "
            r"|the |my |our )?(?:container(?:'s)? )?memory limits?\b[^.\n]{0,60}?\b(?:OOM"
            r"|Out[- ]Of[- ]Memory|dies|died|(?:is |was |gets |got )?killed|crash(?:es|ed)?"
            r"|restarts|restarted)\b"
            r"|\bkilled by (?:the )?[\w-]{1,20} (?:because|since|as) (?:it|they) (?:is|are|was"
            r"|were|ran|runs?) out of (?:memory|RAM)\b"
            r"|\b(?:triggers?|triggered|caus(?:es|ed|e|ing)|leads? to|led to|results? in"
            r"|resulted in) (?:an? |the )?OOM[- ]?kills?\b"
            r"|\bcontainer (?:OOM|out[- ]of[- ]memory) (?:errors?|kills?|events?)\b"
            r"|\b(?:due to|because of|caused by) (?:the |an? |our |my )?(?:instance|machine|node"
            r"|VM|host|server|container|pod|worker|executor)s? (?:running|ran|runs|being) "
            r"(?:low on|out of) (?:RAM|memory)\b"
            r"|\b(?:container|executor|batch job)s? (?:has been |have been |is |was |were "
            r"|keeps? )?(?:failing|failed|fails|dying|died|crashing|crashed) (?:on|with|from"
            r"|due to|because of) (?:an? )?(?:out[- ]of[- ]memory|OOM)\b"
            r"|\b(?:is|was|gets|got|being|to be) killed (?:\w{1,12} ){0,3}(?:because of|due to) "
            r"(?:insufficient|not enough|a lack of|lack of) (?:host |system |CPU )?"
            r"(?:memory|RAM)\b"
            r"|\bafter using up (?:all |\d{1,4} ?[KMGT]i?B )?(?:of )?(?:the |its |my )?"
            r"(?:memory|RAM)\b[^.\n]{0,40}?\b(?:kernel|process|container|notebook|server) "
            r"(?:fails|failed|dies|died|crashes|crashed|restarts|restarted)\b"
            r"|^[^\n]{0,40}?\b(?:cpu|host|system) memory exceed(?:s|ed)?\b"
            # The kubelet's reason, told: "restarts with oomkilled termination reason",
            # "restarts with OOMKill as the reason", "Build crashes due to OOMKill",
            # "OOM-kills happen when the tools run".
            r"|\b(?:restarts?|restarted|terminated|terminates) with (?:an? )?OOM[- ]?Kill(?:ed)?"
            r"(?: termination)? (?:as the )?reason\b"
            r"|\b(?:crash(?:es|ed)?|dies|died|fails|failed) (?:due to|because of|from|with) "
            r"(?:an? |the )?OOM[- ]?Kill(?:ed)?\b"
            r"|\bOOM[- ]kills? (?:happen|happens|happened|occur|occurs|occurred)\b"
            # "it gave an oom error on the cpu side"; "Without the patch, observe an OOMKill";
            # a title "Frequent CPU OOM / Process Killed"; "it will trigger system OOM issue
            # ... instead of Gaudi2 OOM"; "swap memory grows ... until crashing".
            r"|\b(?:OOM|out[- ]of[- ]memory)(?: error)? on the (?:cpu|host) side\b"
            r"|\b(?:observe|observed|see|saw|get|got|hit|hits)\b (?:an? |the )?OOM[- ]?Kill\b"
            r"|\b(?:CPU|host|RAM) OOM\s?/\s?(?:Process )?Killed\b"
            r"|\b(?:trigger|triggers|triggered|make|makes|cause|causes|caused|hit|hits) system "
            r"OOM\b"
            # "nomad log does not indicate anything and kernel OOM is triggered".
            r"|\b(?:kernel|system|host|cgroup) OOM\s{1,3}(?:(?:is|was|gets|got)\s{1,3})?triggered\b"
            r"|\bswap(?: memory)? grows\b[^.\n]{0,60}?\buntil (?:it )?crash(?:es|ed|ing)?\b"
            # "the app is killed by the system because of OOM"; "The instance on fly.io ran out
            # of memory".
            r"|\bkilled by (?:the )?(?:system|kernel|OS) (?:because of|due to) (?:an? )?"
            r"(?:OOM|out[- ]of[- ]memory)\b"
            r"|\b(?:the|my|our) (?:instance|droplet|VM|dyno|container|machine|server)"
            r"(?: on [\w.-]{1,20})? (?:ran|runs|is running|was running|keeps running) out of "
            r"(?:memory|RAM)\b"
            # "the cpu memory occupation suddenly increased (from ~350G to OOM)".
            r"|\b(?:cpu|host|system) memory(?: occupation| usage| use)?\b[^.\n]{0,60}?"
            r"\bto OOM\b"
            # "The memory of computer will rise quickly and eventurally out of memory".
            r"|\b(?:memory|RAM) of (?:the |my |our )?(?:computer|machine|system|server|host|PC)"
            r"\b[^.\n]{0,40}?\b(?:rise|rises|grows?|increases?)\b[^.\n]{0,40}?\bout of memory\b"
            # "My process was getting killed for exceeding the memory limit."
            r"|\b(?:killed|terminated) (?:for|because of|due to|after) (?:exceeding|going over"
            r"|hitting|reaching) (?:its |their |the |my |our |a )?(?:container(?:'s)? )?"
            r"memory limits?\b"
            # "Memory is fully eaten and training quit with errors".
            r"|\b(?:memory|RAM) (?:is|was|got|gets) (?:fully |completely |all )?(?:eaten|used up"
            r"|exhausted)\b[^.\n]{0,40}?\b(?:quit|crash\w{0,3}|died|dies|killed|stopped)\b"
            # "(which leads to CPU OOM in my case)"; "the training consumes all system memory".
            r"|\b(?:leads?|led|leading|lead) to (?:an? )?(?:CPU|host|system|RAM) OOM\b"
            r"|\b(?:uses|used|consumes|consumed|eats|ate|fills|filled) (?:up )?all "
            r"(?:the |of the )?(?:available )?(?:system|host|CPU) (?:memory|RAM)\b"
            # "in a Pod running with a memory limit too low, the out-of-memory error message is
            # swallowed".
            r"|\bmemory limits? (?:(?:is|was|were|set) )?too (?:low|small|tight)\b[^.\n]{0,80}?"
            r"\b(?:out[- ]of[- ]memory|OOM)\b",
            _I | re.MULTILINE,
        ),
        unless=_HEDGE,
    ),
    # A build that took the host's memory: "it exaust the RAM and the PC crashes", "it used
    # 300 gb RAM and eventually crashed", "OOM of my entire system during Docker image build",
    # "the CI runner is going out of memory when compiling the Cuda code" (CUDA is what was
    # compiled, not the memory that ran out).
    told_in_prose(
        _p(
            r"\b(?:exhausts?|exausts?|exhausted|eats?|ate|fills?|filled|uses? up|used up) "
            r"(?:all )?(?:the |my )?(?:RAM|memory)\b[^.\n]{0,30}?\b(?:crash\w{0,3}|freez\w{1,3}"
            r"|dies|died|killed)\b"
            r"|\bused \d{1,4} ?(?:gb|GiB|G) (?:of )?RAM and (?:eventually |then |finally )?"
            r"crash(?:ed|es)\b"
            r"|\bOOM of (?:my|the|our) (?:entire |whole )?(?:system|machine|host|PC|server)\b"
            # "causes runs to be killed when the system doesn't have enough RAM"; "the memory
            # occupied on CPU was getting larger and larger, resulting in other programms
            # killed".
            r"|\bkilled when (?:the )?(?:system|machine|host|box) (?:doesn't|does not|didn't) "
            r"have enough (?:RAM|memory)\b"
            r"|\b(?:memory|RAM)\b[^.\n]{0,60}?\b(?:larger and larger|more and more)\b[^.\n]{0,40}?"
            r"\bkilled\b"
            r"|\b(?:runner|build|compiler|compilation|linker)s? (?:is |was |are |were )?"
            r"(?:runs?|ran|running|going|went|goes) out of memory\b",
            _I,
        ),
        unless=_p(
            r"\b(?:if|maybe|might|may|could|perhaps|probably|possibly|likely|whether"
            r"|suspect\w{0,2}|guess|think)\b[^.!?\n]{0,60}?\b(?:RAM|memory|OOM)\b"
            r"|\b(?:GPU|VRAM|video) memory\b",
            _I,
        ),
    ),
    # The kubelet's OOMKilled seen as the pod's status beside its crashes: "I found couple
    # times it is in OOM status before crash". A guess elsewhere in the sentence ("that maybe
    # it has memory leak issue") is about why, not whether.
    told_in_prose(
        _p(
            r"\b(?:is|was|were|are|in|shows?|showed|showing) (?:in )?(?:an? |the )?"
            r"OOM(?:Killed)? (?:status|state)\b",
            _I,
        ),
        near=_p(r"\bcrash\w{0,6}|\bCrashLoopBackOff\b|\brestart\w{0,3}\b", _I),
        span=3,
        unless=_p(
            r"\b(?:if|maybe|might|may|could|perhaps|probably|possibly|whether)\b[^.!?\n]{0,40}?"
            r"\bOOM|\b(?:GPU|VRAM|CUDA)\b",
            _I,
        ),
    ),
    # A crash put down to the host's memory in the next breath: "it was due to a RAM
    # constraint ... During these bursts, the MySQL container would consistently crash".
    told_in_prose(
        _p(
            r"\b(?:it|this|that) (?:was|is) (?:all )?(?:due to|caused by) (?:a |the )?"
            r"(?:RAM|memory) (?:constraint|limit(?:ation)?|shortage)s?\b",
            _I,
        ),
        near=_p(r"\bcrash(?:es|ed|ing)?\b|\bkilled\b|\bdied\b", _I),
        span=3,
        unless=_HEDGE,
    ),
    # A kill or crash put down to the host's memory limit or growth by whoever read the
    # job's end: "you are just hitting the SLURM memory limits", "Prevent the worker
    # container from being killed on OOM event", "crashed due to raylet's expanding memory
    # usage", "the usage in RAM spikes up and makes the program crash", "filling up the RAM
    # quite quickly before the crash", "added into ram = pc crashes at fill", the kubelet
    # "complains memory pressure and evicting pods".
    told_in_prose(
        _p(
            r"\bhitting (?:the |its |their |your |my )?(?:SLURM|job(?:'s)?|cgroup|container(?:'s)?"
            r"|pod(?:'s)?) memory limits?\b"
            r"|\bkilled on (?:an? )?(?:cgroup )?OOM events?\b"
            r"|\b(?:crash(?:es|ed)?|died|dies|killed) due to (?:[\w-]{1,20}(?:'s)? ){0,2}"
            r"(?:expanding|growing|increasing|rising|excessive|high) memory usage\b"
            r"|\b(?:RAM|memory)(?: usage)? (?:spikes?|spiked|shoots?|shot) (?:up )?and "
            r"(?:makes|made|causes|caused) (?:the |my )?(?:program|process|app|application"
            r"|system|machine|PC|computer) (?:to )?crash"
            r"|\bfill(?:s|ed|ing)? up (?:the |my |all )?(?:RAM|memory)\b[^.\n]{0,40}?"
            r"\bbefore (?:the |it )?crash"
            r"|\b(?:RAM|memory)\b[^.\n]{0,10}?\b(?:PC|computer|laptop|desktop|system|machine) "
            r"crash(?:es|ed)? "
            r"(?:at|when) (?:fill|full)\b"
            r"|\bmemory pressure (?:and|then) (?:starts? |started )?evict(?:s|ed|ing)? "
            r"(?:the |some |all )?pods\b"
            # "The computer keeps saying that it's out of memory. Either shutting down all
            # applications or just crashing"; "keeps taking up all the 12 GB RAM and then
            # crashes"; "session crashes saying available ram is full"; "crash or quit itself
            # after ram spike"; "capped at 7gb. Python program is killed when it hits this".
            r"|\b(?:computer|PC|laptop|system|machine|Windows)\b[^.\n]{0,30}?\b(?:says?|saying"
            r"|reports?|warns?)\b[^.\n]{0,20}?\b(?:it'?s |it is |is )?(?:out of|low on) memory\b"
            r"|\b(?:taking|takes|took|using|uses|used|eats?|eating|ate) up all "
            r"(?:the |my |of the )?(?:available )?(?:\d{1,4} ?(?:GB|G|GiB) (?:of )?)?"
            r"(?:RAM|memory)\b[^.\n]{0,40}?"
            r"\b(?:crash(?:es|ed)?|dies|died|killed|freezes|froze)\b"
            r"|\bsession crash(?:es|ed)?\b[^.\n]{0,40}?\b(?:RAM|memory) (?:is |was )?(?:full"
            r"|exhausted)\b"
            r"|\bcrash(?:es|ed)?\b[^.\n]{0,30}?\bafter (?:a )?(?:RAM|memory) spikes?\b"
            r"|\bcapped at \d{1,4} ?(?:GB|G|GiB)\b[^\n]{0,120}?\bkilled when it (?:hits|reaches)\b"
            # "High RAM consumption when creating model, resulting in notebook crashing"; "the
            # memory occupied ... is too large, causing the training to crash"; "leads to a
            # memory shortage error and stops the learning process".
            r"|\bhigh (?:RAM|memory) (?:consumption|usage|use)\b[^.\n]{0,60}?\bresult(?:s|ed|ing)? "
            r"in (?:the )?(?:notebook |kernel |process |session |app )?crash"
            r"|\b(?:memory|RAM)\b[^.\n]{0,80}?\b(?:too (?:large|high|much)|not enough)\b"
            r"[^.\n]{0,20}?\bcaus(?:ing|es|ed) (?:the )?(?:training|process|program|job|kernel|app"
            r"|system|machine)s? to crash\b"
            r"|\b(?:memory|RAM) shortage error\b[^.\n]{0,20}?\b(?:stops?|stopped|kills?|killed"
            r"|crash(?:es|ed)?)\b"
            # "fails when linking the binaries, as no memory is left"; "cc1plus was killed
            # because of an 'Out of memory' error"; "the kernel kills the largest process".
            r"|\bfail(?:s|ed)?\b[^.\n]{0,60}?\b(?:as|because|since) (?:no|there is no|there's no) "
            r"(?:memory|RAM) (?:is )?left\b"
            r"|\bkilled (?:because of|due to) an? ['\"]?Out of memory['\"]? error\b"
            r"|\bkernel kills the (?:largest|biggest|heaviest) process(?:es)?\b"
            # "experiences OOMKill on executor pods", "Executor pods are killed with OOM
            # error", "OOM kill is triggered because of 20G limit", "we had a number of
            # OOMKills that did result in agent pods going CrashloopBackoff".
            r"|\bexperienc(?:es|ed|ing) (?:an? )?OOM[- ]?Kill(?:s|ed)?\b"
            r"|\b(?:pods?|containers?|executors?|workers?) (?:are|were|is|was|get|gets|got) "
            r"killed with (?:an? )?OOM(?: error)?\b"
            r"|\bOOM[- ]?kill(?:er)? (?:is|was|got|gets) triggered\b"
            # Batch systems: "jobs are killed due to memory limits", "jobs that die due to
            # reaching the LSF imposed memory limit", "the init job has been failing on HPC
            # using slurm due to out-of-memory errors", "one worker goes OOM, the entire ray
            # cluster gets killed by LSF", "h_vmem to be too low, leading to the job to be
            # killed", "I did not allocate enough memory for these jobs to run to completion".
            r"|\b(?:is|are|was|were|gets?|got) killed (?:due to|because of|for exceeding) "
            r"(?:the |its |their )?memory limits?\b"
            r"|\b(?:die|died|dies|killed|fail(?:s|ed)?) due to reaching (?:the |their |its )?"
            r"(?:[\w-]{1,10} )?(?:imposed )?memory limits?\b"
            r"|\bjobs? (?:has been |have been |is |was |keeps? )?(?:failing|failed|fails|dying"
            r"|died|crashing) (?:on|in) [^.\n]{0,40}?\bdue to (?:an? )?(?:out[- ]of[- ]memory|OOM)"
            r"(?: errors?)?\b"
            r"|\bgoes OOM\b[^.\n]{0,60}?\bkilled by (?:LSF|Slurm|SGE|PBS|YARN|HTCondor"
            r"|the scheduler)\b"
            r"|\btoo low, leading to the job (?:to be|being) killed\b"
            # A finding: "we figured out, that it was an out-of-memory-error".
            r"|\b(?:figured out|found out|turned out|found),? that it was an? "
            r"(?:out[- ]of[- ]memory|OOM)(?:[- ]error)?\b"
            r"|\b(?:did not|didn't) (?:allocate|request|give|ask for) enough memory for "
            r"(?:the |these |this |my )?jobs? to (?:run|finish|complete)\b"
            # "Ray OOM causes the process to be killed"; "still encountering a CPU OOM error";
            # "consuming RAM endlessly upon loading, freezing the entire interface and the PC".
            r"|\bOOM caus(?:es|ed|ing) (?:the )?(?:process|worker|task|actor|job)s? to be killed\b"
            r"|\b(?:encounter(?:ing|ed)?|getting|get|got|hit(?:ting)?) (?:a |an |the )?CPU OOM"
            r"(?: error)?\b"
            r"|\b(?:consum(?:es|ing)|eat(?:s|ing)) RAM endlessly\b[^.\n]{0,60}?"
            r"\bfreez(?:es|ing|e)\b"
            r"|\b(?:had|saw|see|seeing|got|get|getting) (?:a (?:number|couple|lot) of |many "
            r"|several |multiple |repeated )?OOM[- ]?Kills\b",
            _I,
        ),
        unless=_HEDGE,
    ),
    # A swap or page file too small named as the OOM's cause: "Page file or swap file size
    # was set too low ... this is what was causing my OOM issue".
    told_in_prose(
        _p(
            r"\b(?:page ?file|paging file|swap ?file|swap)\b[^\n]{0,60}?\b(?:too low|too small)"
            r"\b[^\n]{0,80}?\b(?:OOM|out of memory)\b",
            _I,
        ),
        unless=_p(r"\b(?:if|maybe|might|may|could|perhaps)\b|\?", _I),
    ),
    # macOS's memory-pressure killer named as what killed it: "These are jetsam kills", a
    # JetsamEvent report; not a suspicion of it.
    Family(
        "macos_jetsam_kill",
        "host_oom_killed",
        "medium",
        _p(r"\bJetsamEvent\b|\bjetsam kills?\b|\bkilled by jetsam\b", _I),
        unless=_p(r"\b(?:suspect\w{0,2}|maybe|might|whether|if|perhaps|probably)\b", _I),
    ),
    # macOS's own kill when the compressor's swap runs low, as Console prints it: "low swap:
    # killing largest compressed process with pid 34341 (python3.7)".
    Family(
        "macos_low_swap_kill",
        "host_oom_killed",
        "high",
        _p(r"\blow swap: killing (?:largest compressed |idle )?process\b", _I),
    ),
)
