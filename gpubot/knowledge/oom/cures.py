"""What stands beside a kill and says it was memory: the cure that worked, or the finding.

A kill (SIGKILL, exit 137, the shell's "Killed") whose cause the log does not give becomes a
host memory kill when whoever ran the job says more memory cured it ("I resized to 8gb and it
worked"), or found it to be memory afterwards ("turns out it was just a memory problem"). The
verdict reads these families only beside such a kill (verdict._cured_by_memory). Patterns
follow the bounds of *_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

# A kill its reporter found to be memory, told after the fact: "Turns out it was just a
# memory problem." Read only beside a kill (SIGKILL, 137, Killed), as MEMORY_CURE is; not the
# card's memory, not a hedge.
KILL_FOUND_MEMORY = Family(
    "kill_found_to_be_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:turns|turned) out(?: that)? (?:(?:it|this|that) (?:was|is)|it'?s) "
        r"(?:just |simply |only )?"
        r"(?:a |an )?(?:memory|RAM|out[- ]of[- ]memory|OOM) (?:problem|issue)\b"
        # "It turns out that the memory on Colab is limited"; "your system does not have
        # sufficient memory"; "\u5185\u5b58\u4e00\u76f4\u589e\u957f" (the memory kept growing).
        r"|\b(?:turns|turned) out(?: that)? the (?:memory|RAM) "
        r"(?:(?:on|of|in) (?:the |my |our )?[\w-]{1,20}(?: [\w-]{1,12})? )?"
        r"(?:is|was) (?:limited|not enough|insufficient|too small)\b"
        # "We currently have some memory issue when running in GitHub Actions".
        r"|\b(?:we|I) (?:currently |still )?have (?:some |a )?memory issues?\b"
        r"|\b(?:your|my|the) (?:system|machine|server|host|computer) (?:does not|doesn't|did not"
        r"|didn't) have (?:sufficient|enough) (?:memory|RAM)\b"
        r"|\u5185\u5b58(?:\u4e00\u76f4|\u6301\u7eed|\u4e0d\u65ad)(?:\u589e\u957f|\u4e0a\u6da8|\u589e\u52a0)"
        # Memory seen to explode beside the kill: "it will cause the memory to explode
        # (reaching more than 100 G)".
        r"|\bcaus(?:e|es|ed|ing) (?:the )?(?:memory|RAM) to (?:explode|blow up|skyrocket)\b"
        # The finding as a line of its own: "Docker memory issue."
        r"|^\W{0,4}(?:Docker|container|host|system) memory (?:issue|problem)\.?\s*$"
        # ... or "Out of memory." alone, a maintainer's whole answer; "the error was running
        # out of available RAM".
        r"|^\W{0,4}(?:Out of memory|Not enough (?:RAM|memory))\.?\s*$"
        # "16GB of RAM is not enough for this workflow"; "the problem was that I was running
        # out of RAM".
        r"|(?<!like )(?<!seems )(?<!guess )\b\d{1,4} ?(?:GB|G|GiB) (?:of )?(?:RAM|memory) "
        r"(?:is|was) (?:not|n't) enough\b"
        r"|\bthe (?:problem|issue|cause) was that (?:I|we|it) (?:was|were) (?:running|ran) "
        r"(?:out|our) of (?:RAM|memory)\b"
        # ... in Chinese: "CPU内存(252G)占满" (the CPU's memory, 252G, full), not the card's.
        r"|(?<![\u663e\u986f])\u5185\u5b58\s?[\uff08(]?\s?\d{0,4}\s?[GM]?B?\s?[)\uff09]?\s?"
        r"(?:\u5360\u6ee1|\u88ab\u5360\u6ee1|\u6ee1\u4e86|\u7206\u6ee1)"
        # "It turned out to be due to OOM."
        r"|\b(?:it |this )?turn(?:s|ed) out to be (?:due to|caused by|because of) (?:an? )?"
        r"(?:OOM|out[- ]of[- ]memory|(?:host |system )?memory)\b"
        # A title that names the host's memory as what the kill wanted: "[Issue]: llama 2
        # example requires too much RAM", "# Not enough RAM when using the index builder".
        r"|\b(?:requires|needs|uses|takes|consumes) too much (?:RAM|host memory|system memory"
        r"|CPU memory)\b"
        r"|^\W{0,4}Not enough (?:RAM|host memory|system memory) (?:when|while|for|to|during)\b"
        # "Both results in out-of-memory" (the runs that ended "Killed").
        r"|\b(?:both|each|all|every run|it) (?:results?|ends?|ended|resulted) in (?:an? )?"
        r"(?:out[- ]of[- ]memory|OOM)\b"
        # "The SIGKILL is because of out-of-memory."
        r"|\b(?:SIGKILL|kill|signal 9)\b[^\n]{0,20}? (?:is|was) (?:because of|due to|caused by) "
        r"(?:an? |the )?(?:out[- ]of[- ]memory|OOM)\b"
        # "Exit code 137 means your job is being killed by your HPC because it's out of memory".
        r"|\bkilled by (?:the |your )?[\w-]{1,20} because it'?s out of memory\b"
        r"|\bthe (?:error|problem|issue|cause) (?:was|is) (?:running|ran|run) out of "
        r"(?:available |host |system )?(?:RAM|memory)\b"
        # "Yes, it is due to insufficient memory"; "That is because you do not have enough
        # CPU RAM to do the conversion".
        r"|\b(?:it|this|that) (?:is|was|'s) (?:just |simply )?(?:due to|because of) "
        r"(?:insufficient|not enough|a lack of|lack of) (?:host |system |CPU )?(?:memory|RAM)\b"
        r"|\bbecause you (?:do not|don't) have enough (?:host |system |CPU )?(?:memory|RAM)\b"
        # Memory watched filling to the end beside the kill: "the ram increases until it is
        # completely filled".
        r"|\b(?:RAM|memory)(?: usage)? (?:increases|increased|grows|grew|keeps growing|climbs"
        r"|climbed|rises|rose|fills up|filled up) until (?:it is |it's |it was )?(?:completely "
        r"|totally |entirely )?(?:filled|full|exhausted|used up)\b"
        # "pd consumes more and more memory" beside the kill; the box's memory exceeded.
        r"|\bconsum(?:es|ed|ing) more and more (?:memory|RAM)\b"
        # "i saw my memory reach the limit 15.99"; "The memory usage of the calculation result
        # exceeds the amount of memory allocated by the system".
        r"|\b(?:my |the )?(?:memory|RAM) (?:reach(?:es|ed)?|hit|hits) (?:the |its )?limit\b"
        r"|\b(?:memory usage|memory use|RAM usage)\b[^\n]{0,60}?\bexceeds? the (?:amount of )?"
        r"(?:memory|RAM) (?:allocated|available|requested|assigned)\b"
        # "Solved. Didn't have enough CPU memory."
        r"|\b(?:Solved|Fixed)\W{0,3} (?:I )?(?:didn't|did not) have enough (?:CPU |host |system )?"
        r"(?:memory|RAM)\b"
        # ... or the box it ran in said to run out: "It seems my container out of memory".
        r"|\b(?:my|the|our|your) (?:container|droplet|VM|machine|server|box|processing node) "
        r"(?:ran |runs |is |was |went |got )?out of (?:memory|RAM)\b"
        # ... in Chinese: "查看内存直接爆掉了" (the memory had blown up), not the card's.
        r"|(?<![\u663e\u986f])\u5185\u5b58(?:\u76f4\u63a5|\u90fd|\u5168)?\u7206(?:\u6389|\u6ee1)?\u4e86"
        # ... "是长度太长内存不足导致的" (it was caused by memory too small for the length).
        r"|(?<![\u663e\u986f])\u5185\u5b58(?:\u4e0d\u8db3|\u4e0d\u591f)(?:\u7684\u95ee\u9898)?[\uff0c,]?\s?"
        r"(?:\u5bfc\u81f4|\u5f15\u8d77|\u9020\u6210)"
        # The data too big for the host's memory, or the message the kill left: "The size of
        # your dataset is too large to load memory"; "the Screenshot with the message out of
        # memory".
        r"|\btoo (?:large|big) to (?:load|fit|hold)(?: it)? (?:in |into |in the )?(?:memory|RAM)\b"
        r"|\b(?:the |a )?message:? [\"'`]?out of memory\b"
        # "This issue does not occur if I allocate 6GB of RAM to the virtual machine."
        r"|\b(?:does not|doesn't|did not|didn't) (?:occur|happen)\b[^\n]{0,20}?\bif I "
        r"(?:allocate|give|assign) \*{0,2}\d{1,4} ?(?:GB|G)\*{0,2} of RAM\b",
        _I,
    ),
    unless=_p(
        r"\b(?:GPU|VRAM|CUDA)\b|显存|顯存|\b(?:maybe|might|probably|perhaps|possible|possibly)\b"
        r"|感觉|感覺|应该|應該|可能|也许|也許|好像|似乎|估计|估計|多半|大概|大多",
        _I,
    ),
)

# A reader's guess that memory ran out, confirmed by whoever ran the job: "your machine
# probably ran out of memory ... the OOM killer" and then "thanks that was it". Read only
# beside a kill, as MEMORY_CURE is; not the card's memory.
KILL_CONFIRMED_MEMORY = Family(
    "kill_found_to_be_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:thanks?|thank you|yup|yes|yep|indeed)\b[^\n]{0,30}?\bthat was (?:it|the (?:problem"
        r"|issue|cause))\b"
        r"|^\W{0,4}(?:yeah|yes|yep|yup),? you(?:'re| are) right\b",
        _I,
    ),
    near=_p(
        r"\b(?:ran|run|running|runs) out of (?:host |system )?(?:memory|RAM)\b|\bOOM[- ]killer\b"
        r"|\b(?:insufficient|not enough) (?:host |system )?(?:memory|RAM)\b",
        _I,
    ),
    span=4,
    unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\u663e\u5b58", _I),
)

# A kill its maintainer put down to too little memory: "this notebook does not work with the
# free version of Colab due to insufficient memory". Read only beside a kill, as MEMORY_CURE
# is; not the card's memory, not a guess.
KILL_FOR_WANT_OF_MEMORY = Family(
    "kill_found_to_be_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:does not|doesn't|did not|didn't|won't|will not|cannot|can't) (?:work|run|fit"
        r"|finish|complete)\b[^\n]{0,80}?\b(?:due to|because of) (?:insufficient|not enough"
        r"|a lack of|lack of|limited) (?:host |system )?(?:memory|RAM)\b"
        # "It's the 32GB RAM that's the issue"; "you don't have enough RAM to run it".
        r"|\b(?:it'?s|it is) the \d{1,4} ?(?:GB|G) (?:of )?(?:system )?RAM (?:that'?s|that is"
        r"|which is) the (?:issue|problem)\b"
        r"|\byou (?:do not|don't) have enough (?:system )?(?:RAM|memory) to (?:run|load)\b",
        _I,
    ),
    unless=_p(r"\b(?:GPU|VRAM|CUDA)\b|\u663e\u5b58|\b(?:maybe|might|perhaps|could)\b", _I),
)

# The host's memory seen filling beside a kill, by whoever ran the job: "Both ram memory and
# swap go to 100% and then it just outputs Killed", "it took up 12GB of memory, and then the
# program was killed", "the memory is occupied by almost 60GB ... and the training process is
# killed", "such a memory leak that it will be killed by the system", "the usage of CPU
# memory become more and more ... which cause the error". Read only beside a kill, as
# MEMORY_CURE is; not the card's memory (a spec naming the GPU elsewhere in the paragraph is
# no matter), not a guess in the same sentence.
KILL_MEMORY_FILLING = Family(
    "kill_found_to_be_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:RAM|memory|swap)\b[^\n]{0,30}?\b(?:go|goes|went|reach(?:es|ed)?) "
        r"(?:to |up to )?100 ?%"
        # "I'm reaching 100% system memory utilization"; "my 15.5 GB RAM is running full".
        r"|\b(?:RAM|memory) (?:is|was) (?:running|filling|getting) (?:up )?full\b"
        r"|\breach(?:es|ed|ing)? 100 ?% (?:of )?(?:the )?(?:system |host )?(?:memory|RAM)\b"
        r"|\b(?:RAM|memory)(?: usage| consumption)? (?:continuously |steadily |keeps (?:on )?"
        r"|kept (?:on )?)(?:increas(?:es|ed|ing)|grow(?:s|ing)|ris(?:es|ing))\b"
        r"|\b(?:RAM|memory)(?: usage)? continues to (?:increase|grow|rise)\b"
        # "the memory overflowed directly when loading the model file" (内存溢出 translated).
        r"|\b(?:the |my )?(?:RAM|memory) overflowed\b"
        r"|\b(?:RAM|memory)(?: memory)? (?:was|is|kept) increasing\b"
        r"|\b(?:memory|RAM) and swap (?:were|was|are|is) (?:fully |completely )?(?:occupied|full"
        r"|used up|exhausted)\b"
        r"|\breach(?:ed|es) (?:the |its )?max(?:imum)?\s?\(\d{1,4} ?(?:G|GB|GiB)\)"
        r"|\btook up \d{1,4} ?(?:GB|G|GiB) of (?:memory|RAM)\b"
        r"|\b(?:memory|RAM) is occupied by (?:almost |about |nearly |over )?\d{1,4} ?(?:GB|G|GiB)\b"
        r"|\bmemory leak\b[^\n]{0,40}?\bkilled by the (?:system|OS|kernel)\b"
        r"|\b(?:CPU|host|system) memory (?:become|becomes|became|grows|grew|goes|went) more and "
        r"more\b"
        # "reaches over 19 GB just before it stops"; "hitting 15Gi of 15Gi available RAM";
        # "What helped in my case was realizing that it had no swap file".
        r"|\breach(?:es|ed) (?:over |about |almost |nearly )?\d{1,4} ?(?:GB|G|GiB) (?:just )?"
        r"before it (?:stops|stopped|dies|died|crash\w{0,3}|gets killed|was killed|is killed)\b"
        r"|\b(?:hitting|hit|using|used|at) (\d{1,4}(?:\.\d{1,2})?) ?(Gi|GB|G|GiB) of \1 ?\2 "
        r"(?:of )?(?:available |total )?(?:RAM|memory)\b"
        r"|\b(?:what helped|the fix was|what fixed it)\b[^\n]{0,60}?\bno swap\b",
        _I,
    ),
    unless=_p(
        r"\b(?:GPU|VRAM|CUDA) (?:memory|RAM)\b|\u663e\u5b58"
        r"|\b(?:maybe|might|probably|perhaps|if)\b[^.!?\n]{0,60}?\b(?:memory|RAM)\b",
        _I,
    ),
)

# A kill whose cure was tried the line before it was reported to work: "trying a larger swap
# file now..." then "It worked, thanks a lot!". Read beside a kill, as MEMORY_CURE is.
KILL_CURE_TRIED = Family(
    "kill_cured_by_more_memory",
    "host_oom_killed",
    "medium",
    _p(r"\b(?:it|that|this) (?:worked|works|did the trick)\b", _I),
    near=_p(
        r"\b(?:try(?:ing)?|tried|add(?:ed|ing)?|creat(?:ed|ing)|increas(?:ed|ing)) (?:a |an )?"
        r"(?:larger|bigger|more|extra|\d{1,4} ?(?:[GM]i?B|gb|mb|[GM])) ?(?:of )?"
        r"(?:swap|RAM|memory)\b",
        _I,
    ),
    span=2,
    unless=_p(r"\b(?:didn't|did not|doesn't|does not|not|still|GPU|VRAM|CUDA)\b", _I),
)

# A kill that more memory cured, told by whoever ran the job: "I resized to 8gb and it
# worked", "solved this problem by expanding memory space of my container", "completed with
# a limit of 750M". Evidence only beside a kill (SIGKILL, 137, Killed): the verdict reads it
# there and nowhere else. Not the card's memory, and not a cure that failed.
MEMORY_CURE = Family(
    "kill_cured_by_more_memory",
    "host_oom_killed",
    "medium",
    _p(
        r"\b(?:resiz|increas|rais|expand|bump|upgrad|doubl|mov|switch|add)(?:ed|ing)\b[^\n]{0,60}?"
        r"\b(?:memory|RAM|mem|swap|\d{1,5} ?(?:[GM]i?B|gb|mb|[GM]))\b[^\n]{0,60}?"
        r"\b(?:(?:and |then )?(?:it |that |everything )?(?:worked|works|succeeded|succeeds"
        r"|completed|completes|finished|finishes|went through|passed|passes|helped|helps)"
        r"|fixed (?:it|this|the)|solved (?:it|this|the)"
        r"|did the (?:job|trick))\b"
        # "give more memory to docker resource does the trick"; "Now it works, increased
        # `ES_MEM_LIMIT=4073741824`"; "got it building on DO with: `16 GB Memory`".
        r"|\b(?:giv(?:e|ing)|gave) (?:it |docker |the container )?more (?:memory|RAM)\b[^\n]{0,40}?"
        r"\b(?:does|did) the (?:trick|job)\b"
        r"|\b(?:now it works|it works now|now works)\b[^\n]{0,40}?\b(?:increas|rais|bump)ed\b"
        r"[^\n]{0,40}?\b(?:memory|mem|RAM|\w{0,20}MEM(?:ORY)?_?LIMIT)\b"
        r"|\bgot it (?:building|working|running|to build|to work)\b[^\n]{0,40}?\bwith:?\s?`?\s?"
        r"\d{1,4} ?GB (?:Memory|RAM)\b"
        r"|\b(?:solved|fixed|resolved)\b[^\n]{0,40}?\bby (?:expanding|increasing|raising"
        r"|adding|giving|allocating|bumping|doubling|upgrading)\b[^\n]{0,40}?\b(?:memory|RAM)\b"
        # "I doubled the memory and the indexing proceeds nicely".
        r"|\b(?:doubl|increas|rais|bump)ed the (?:memory|RAM)(?: limit)?\b[^\n]{0,30}?"
        r"\b(?:proceeds|proceeded|runs fine|ran fine|runs through|ran through)\b"
        # "I needed to increase the resources to 1GB" (said of a container that was killed).
        r"|\b(?:needed|had) to (?:increase|raise|bump|double) (?:the |its |my )?"
        r"(?:resources|memory|RAM|memory limit)\b[^\n]{0,20}?\bto \d{1,5} ?(?:[GM]i?B|gb|mb|[GM])\b"
        # "increasing the swap space, solved my problem" (and its frequent misspelling).
        r"|\b(?:increas|add|enlarg|expand)(?:ed|ing) (?:the )?swap(?: space| file| size)?\b"
        r"[^\n]{0,20}?\b(?:solved|sloved|fixed|resolved) (?:my|the|this|it)\b"
        # ... with the tool's link between: "Increasing the **swap space** to 10GB on the
        # runner with [set-swap-space](https://...) fixed the problem for me".
        r"|\b(?:increas|add|enlarg|expand)(?:ed|ing) (?:the )?\**swap(?: space| file| size)?\**"
        r"[^\n]{0,160}?\b(?:fixed|solved|resolved) the problem\b"
        r"|\b(?:completed|worked|works|succeeded|finished|passed|went through)\b[^\n]{0,80}?"
        r"\bwith (?:a |the )?(?:memory |RAM )?limit of \d{1,6} ?[KMG]i?B?\b"
        # "It started to work on the machine with 80GB of memory".
        r"|\b(?:started|began) to (?:work|run|pass)\b[^\n]{0,20}?\b(?:on|with) (?:a |the )?"
        r"(?:machine|server|instance|node|VM|box|host) with \d{1,5} ?(?:[GT]i?B|gb|[GT]) "
        r"(?:of )?(?:memory|RAM)\b"
        # "I managed to get the job to succeed with 64G memory reservation".
        r"|\b(?:succeed|succeeded|work|worked|complete|completed|finish|finished|pass|passed)"
        r" with (?:a |an )?\d{1,5} ?(?:[GMT]i?B?|gb|mb) (?:of )?(?:memory|RAM)"
        r"(?: reservation| limit| request)?\b"
        # "The error vanished after I upgraded my system with additional RAM".
        r"|\b(?:vanished|went away|disappeared|was gone|stopped)\b[^\n]{0,20}?\bafter\b[^\n]{0,40}?"
        r"\b(?:upgrad|add|increas|doubl|expand)\w{0,4}\b[^\n]{0,40}?\b(?:RAM|memory)\b"
        # ... in Chinese: "32G改为64G问题就解决了" (32G changed to 64G, the problem went away).
        r"|\d{1,4} ?[GM]B?\s?(?:改为|改成|换成|換成|加到|增加到|升级到|升級到|提高到)"
        r"\s?\d{1,4} ?[GM]B?[^\n]{0,20}?(?:解决|解決|好了|可以了|正常)"
        # ... "把内存扩大到 256G, 跑4卡微调成功了" (memory expanded to 256G, the run succeeded).
        r"|(?<![\u663e\u986f])\u5185\u5b58(?:\u6269\u5927|\u589e\u52a0|\u52a0\u5927|\u63d0\u9ad8|\u5347\u7ea7)"
        r"\u5230\s?\d{1,4}\s?[GT]B?[^\n]{0,20}?(?:\u6210\u529f|\u6b63\u5e38|\u89e3\u51b3|\u53ef\u4ee5)"
        # ... "增加内存后已正常" (after adding memory it runs normally).
        r"|(?:增加|加大|扩大|擴大|提高|升级|升級)(?:了)?(?:虚拟机|虛擬機)?(?:内存|內存|記憶體)"
        r"(?:后|後|之后|之後|以后|以後)?[^\n]{0,6}?(?:已|就)?(?:正常|解决|解決|好了|可以了)"
        # "Had to allocate 70Gb of swap to make it work"; "I solved by using a 32Gb RAM
        # machine + 10Gb Swap".
        r"|\b(?:had|needed) to (?:allocate|add|use|give it)\b[^\n]{0,40}?\b(?:memory|RAM|swap)\b"
        r"[^\n]{0,30}?\bto make it (?:work|run|pass|finish)\b"
        r"|\bsolved\b(?: it| this)? by using (?:a |an )?\d{1,4} ?(?:[GT]i?B|gb|[GT]) ?"
        r"(?:of )?(?:RAM|memory)\b"
        # A memory limit taken away: "I removed the mem limits and it fixed it".
        r"|\b(?:removed|removing|lifted|dropped) (?:the |my |its |those )?(?:mem|memory|RAM) "
        r"limits?\b[^\n]{0,30}?\b(?:fixed|solved|resolved) (?:it|this|the)\b"
        # "Setting Docker from 2gig ram to 4 gig ram fixed my issue".
        r"|\bfrom \d{1,5} ?(?:[GM]i?B|gigs?|gb|mb|[GM])\b(?: (?:of )?(?:RAM|memory))? to "
        r"\d{1,5} ?(?:[GM]i?B|gigs?|gb|mb|[GM])\b(?: (?:of )?(?:RAM|memory))?[^\n]{0,20}?"
        r"\b(?:fixed|solved|resolved) (?:it|this|the|my)\b"
        # "the memory limit was limited to 2G. I changed it to 4G and the build did not fail".
        r"|\b(?:memory|RAM)\b[^\n]{0,80}?\b(?:changed|raised|increased|set|bumped) it to "
        r"\d{1,5} ?(?:[GM]i?B|gb|mb|[GM])\b[^\n]{0,40}?\b(?:did not|didn't) (?:fail|crash)\b"
        # A bigger box: "Resizing the droplet fixed it", "I deployed my app to a bigger
        # machine and it works well now".
        r"|\bresiz(?:ed|ing) (?:the |my )?(?:droplet|VM|instance|machine|server)\b[^\n]{0,20}?"
        r"\b(?:fixed|solved|resolved) (?:it|this|the)\b"
        r"|\bsolved (?:it )?with (?:the |a |more |bigger )?swap\b"
        # WSL's VM gets its memory and swap from .wslconfig: "It has to be updated in the
        # %UserProfile%\\.wslconfig" (said of a kill, as its cure).
        r"|\b(?:updated?|set|changed?|edit(?:ed)?|increas(?:ed|e)|rais(?:ed|e)) (?:it )?in "
        r"(?:the |your |my )?\S{0,30}\.wslconfig\b"
        r"|\b(?:deployed|moved|switched|migrated|ran) (?:it |my app |the app |the job )?(?:to|on)"
        r" a (?:bigger|larger) (?:machine|server|instance|droplet|VM|box)\b[^\n]{0,30}?"
        r"\b(?:works|worked|succeeded|runs fine|ran fine)\b"
        # The container's limit found to be the cause and raised: "the problem is caused by me
        # docker memory limitation. I tried to increase it and the problem is solved"; a change
        # that caps a program's memory "to prevent OOM kills" and "Fixes silent process
        # termination (exit=137)".
        r"|\b(?:docker|container)(?:'s)? memory limit(?:ation)?s?\b[^\n]{0,80}?\b(?:increas"
        r"|rais)\w{1,4} (?:it|them)\b[^\n]{0,40}?\b(?:solved|fixed|resolved|works|worked)\b"
        r"|\bto (?:prevent|avoid) OOM[- ]kills\b"
        # "I gave it 2GB, which seemed to be enough."
        r"|\bgave it (?:\d{1,5} ?(?:[GM]i?B|gb|mb|[GM])|more (?:memory|RAM))\b[^\n]{0,40}?"
        r"\b(?:enough|worked|works|fixed it|did the trick)\b",
        _I,
    ),
    unless=_p(
        r"\b(?:GPU|VRAM|CUDA)\b|\b(?:didn't|did not|doesn't|does not)\b(?! (?:fail|crash))"
        r"|\b(?:still|no longer)\b"
        # "not" that negates a cure ("not solved", "not fix it"), not "and not just Killed".
        r"|\bnot\b[^\n]{0,30}?\b(?:solv|fix|help|work|resolv|succeed|pass|complet|finish)"
        r"|显存|顯存|还是|還是|没有|沒有",
        _I,
    ),
)
