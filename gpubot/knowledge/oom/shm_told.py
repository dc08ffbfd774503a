"""Shared memory too small, told in a sentence or known by what stands beside it: a
reporter's or maintainer's words that the tmpfs at /dev/shm is full, limited or too small for
the job, the cure that worked (a larger --shm-size, Docker's IPC mode), and machine lines that
are shared memory's only by their context (Chrome's out of memory beside Docker's shm
settings, a bus error inside NCCL). Read after the machine's own reports in shm_families; a
hedge, a condition or a cure that failed is not evidence. Patterns follow the bounds of
*_families: literals and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


_I = re.IGNORECASE

SHM_TOLD: tuple[Family, ...] = (
    # Docker's 64 MiB /dev/shm named as the cause of "a shared-memory allocation error".
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(r"\bshared[- ]memory allocation (?:error|failure)s?\b", re.IGNORECASE),
        near=_p(r"/dev/shm|\bshm[-_ ]size\b|--shm-size", re.IGNORECASE),  # noqa: S108
        span=4,
    ),
    # /dev/shm said to be full, in a sentence: "that data eventually filled up /dev/shm",
    # "grows continuously until /dev/shm (default size: 64 MiB) is exhausted", "my job
    # failed with /dev/shm issues". Not a condition, and not advice on avoiding it.
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"\b(?:fill(?:s|ed|ing)?(?: up)?|exhaust(?:s|ed|ing)?)\b (?:all of |up )?/dev/shm\b"
            r"|/dev/shm`?(?: tmpfs)?(?: partition| mount| filesystem)? "
            r"(?:fills|filled|keeps filling|is filling) up\b"
            r"|/dev/shm\b(?: \([^)\n]{0,40}\))? (?:is|was|got|gets|became|becomes) (?:completely )?"
            r"(?:full|exhausted|filled up)\b"
            r"|\bfail(?:s|ed)?\b[^\n]{0,60}?\bwith /dev/shm (?:issues?|problems?|errors?)\b"
            # "The accumulated DSM reached the limit of /dev/shm and fail subsequent
            # requests"; a PR that fixes the "Shared Memory Limit error" its issue reported.
            r"|\breach(?:ed|es)? the (?:size )?limit of /dev/shm\b"
            # "Chrome uses /dev/shm ..., limited to 64MB on CI runners. When Chrome exhausts
            # this, it crashes mid-session".
            r"|/dev/shm\b[^\n]{0,200}?\b(?:exhausts?|exhausted|fills?|filled) (?:this|it)\b"
            r"[^.\n]{0,30}?\bcrash(?:es|ed)?\b"
            r"|\b(?:fix(?:es|ed)?|address(?:es|ed)?|resolv(?:es|ed))\b[^\n]{0,240}?"
            r"\bShared Memory Limit errors?\b"
            # ... or too small for the job: "default /dev/shm too small on podman to train".
            r"|/dev/shm`? (?:is |was )?(?:way |far |much )?too small (?:on|in|for|to)\b"
            # ... in Chinese, filled to the brim: "/dev/shm用满", "/dev/shm空间占用100%".
            r"|/dev/shm(?:\u7a7a\u95f4)?(?:\u5360\u7528|\u4f7f\u7528)?\s?100\s?%"
            r"|/dev/shm(?:\u7a7a\u95f4)?(?:\u7528\u6ee1|\u6ee1\u4e86|\u5df2\u6ee1|\u5360\u6ee1)"
            # ... or found as the cause by whoever ran it: "I find it is caused by lack of
            # shared memory."
            r"|\b(?:it|this|that) (?:is|was) caused by (?:a |the )?lack of shared memory\b",
            _I,
        ),
        unless=_p(
            r"\b(?:if|in case|unless|never|avoid\w{0,3}|prevent\w{0,3}|might|could|may)\b"
            r"[^\n]{0,40}?/dev/shm",
            _I,
        ),
    ),
    # /dev/shm said to be a small fixed size and too small for the job: "The default
    # /dev/shm size for docker is only 64MB, which is far too small for us", "restricted to
    # 64MB and this is inadequate"; and, in Chinese, growing until the run fails.
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"/dev/shm`?\s?(?:size |space )?(?:for (?:docker|containers?|the container) |in docker "  # noqa: S108
            r"|in the container )?(?:is|was) "
            r"(?:at )?(?:only |restricted to |limited to |capped at )?\d{1,5} ?[MK](?:i?B)?\b"
            r"|/dev/shm`?\s?size (?:of|is) `?\d{1,5} ?[MK]i?B\b"
            # "worker crashes when Postgres needs to use more than 64MB of POSIX shared memory".
            r"|\bcrash\w{0,3}\b[^\n]{0,80}?\bmore than \d{1,4} ?MB of (?:POSIX )?shared memory\b"
            # "In the Docker container, /shm is present but defaults to 64 MB."
            r"|(?:/dev)?/shm\b[^.\n]{0,40}?\bdefaults? to \d{1,5} ?[MK](?:i?B)?\b"
            r"|/dev/shm[^\n]{0,10}?(?:\u5360\u7528|\u4f7f\u7528)?(?:\u7a7a\u95f4)?"
            r"\u8d8a\u6765\u8d8a\u5927[^\n]{0,30}?(?:\u5931\u8d25|\u62a5\u9519|\u5d29\u6e83)",
            _I,
        ),
        near=_p(
            r"\btoo small\b|\binadequate\b|\bnot enough\b|\b(?:wasn't|isn't|was not|is not) "
            r"enough\b|\bran out\b|\brunning out\b|\bcrash|\u5931\u8d25|\bused up\b"
            r"|\bwhen it's full\b"
            # ... or the cure named with it: "simply passing `--shm-size` with a higher value".
            r"|--shm-size\b",
            _I,
        ),
        span=2,
        unless=_p(r"\b(?:if|in case|unless)\b[^\n]{0,30}?/dev/shm", _I),
    ),
    # A container's shared memory told to be a few megabytes, beside what it broke or its
    # cure: "the pod only allows 64MB of shared memory by default" with an NCCL error or
    # "--shm-size"; in Chinese, "Pod默认只允许最多使用64MB共享内存".
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"\b(?:(?:only|just)(?: allows?| gets?| has| had| gives?)?(?: up to)?|limited to"
            r"|capped at|at most|max(?:imum)?(?: of)?) \d{1,3} ?(?:MB|MiB|M) "
            r"(?:of )?shared memory\b"
            r"|\d{1,3} ?(?:MB|MiB|M)\s?(?:\u7684)?\u5171\u4eab\u5185\u5b58"
            r"|\u5171\u4eab\u5185\u5b58(?:\u53ea\u6709|\u4ec5\u6709|\u9ed8\u8ba4(?:\u4e3a|\u662f)?)\s?"
            r"\d{1,3} ?(?:MB|MiB|M)",
            _I,
        ),
        near=_p(r"\bNCCL\b|--shm-size|\bshm[-_ ]size\b|/dev/shm|DataLoader|num_workers", _I),
        span=8,
        unless=_p(r"\b(?:if|in case|unless|when)\b[^\n]{0,30}?shared memory", _I),
    ),
    # Shared memory told to be too small for the data loader's workers: "this error is known
    # to occur when the shared memory in the Docker container is insufficient", "default
    # shared memory too low" with fewer workers as the workaround.
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"\bshared memory\b[^\n]{0,40}?\b(?:is|was|are) (?:insufficient|too (?:small|low)"
            r"|not (?:big |large )?enough)\b|\bshared memory (?:too (?:small|low)|insufficient)\b",
            _I,
        ),
        near=_p(
            r"\bDataLoader\b|\bnum_workers\b|--shm-size|--ipc[= ]host|\bshm[-_ ]size\b"
            # ... or the container it was too small in, beside what it broke: "My code
            # crashes since the amount of shared memory in my Singularity container is not
            # enough".
            r"|\bcrash\w{0,4}\b[^\n]{0,60}?\bshared memory in (?:my |the |a )?(?:Docker "
            r"|Singularity |Apptainer |Podman )?container\b",
            _I,
        ),
        span=6,
        # Not advice for when it might be ("... if the default is not large enough").
        unless=_p(r"\b(?:if|unless|in case|whether)\b", _I),
    ),
    # /dev/shm named full, in English or Chinese: "the /dev/shm disk usage reaches 100%",
    # "这通常是由于 /dev/shm 的可用空间不足导致的" (usually because /dev/shm lacks free space).
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"/dev/shm`?[^\n]{0,20}?\b(?:usage|use%?) (?:reaches|reached|hits|hit|at|is) 100 ?%"  # noqa: S108
            r"|/dev/shm`?\s?(?:\u7684)?\s?(?:\u53ef\u7528)?\s?\u7a7a\u95f4\s?"
            r"(?:\u4e0d\u8db3|\u4e0d\u591f|\u6ee1\u4e86|\u5df2\u6ee1)",
            _I,
        ),
        unless=_p(r"\b(?:if|in case|unless)\b[^\n]{0,30}?/dev/shm", _I),
    ),
    # /dev/shm told to be limited in the container, with what it broke or its cure: "all seems
    # to be caused by the size of `/dev/shm` being too limited by default under Docker", "In
    # Docker, `/dev/shm` is restricted, so Chromium dies of OOM".
    Family(
        "shm_full_in_prose",
        "shm_exhausted",
        "medium",
        _p(
            r"/dev/shm`?\s?(?:is|being|was|are) (?:too |very |quite )?(?:limited|restricted"  # noqa: S108
            r"|capped|small)\b",
            _I,
        ),
        near=_p(r"\bcaus\w{1,4}\b|\bdies?\b|\bcrash|--shm-size|\bshm[-_ ]size\b|\bso\b", _I),
        span=1,
        unless=_p(r"\b(?:if|unless|in case|whether)\b[^\n]{0,30}?/dev/shm", _I),
    ),
    # A larger /dev/shm told as what cured the failure: "I resolved this issue in my Docker
    # environment by increasing the shm-size", "fix it by adding ... `--shm-size 8g`",
    # "Change of shm-size solved mine", "after increasing the size of `/dev/shm`, the
    # NCCL-test ... was working". Not a cure that failed, not a suggestion.
    Family(
        "shm_cured_by_size",
        "shm_exhausted",
        "medium",
        _p(
            r"\b(?:resolved|solved|solve|fixed|fix|fixes|fixing)\b[^\n]{0,60}?\bby (?:increasing"
            r"|raising"
            r"|enlarging|adding|setting|passing|bumping|changing|using)\b[^\n]{0,60}?"
            r"(?:--shm-size|\bshm[-_ ]size\b|/dev/shm|--ipc[= ]host|\bipc[=:] ?host\b)"
            r"|(?:--shm-size|\bshm[-_ ]size\b)[^\n]{0,20}?\b(?:solved|fixed|resolved) "
            r"(?:it|this|the|my|mine)\b"
            r"|\bfix(?:es|ed)? an? (?:error|crash|problem)\b[^\n]{0,100}?"
            r"\b(?:increas\w{1,3}|rais\w{1,3}) the shared memory\b"
            r"|^\W{0,6}(?:Adding|Setting|Passing|Increasing)\b[^\n]{0,30}?"
            r"(?:--shm-size|--ipc[= ]host)"
            r"|\b(?:up|upped|increased?|raised?|bumped|enlarged?) the (?:space|size) "
            r"(?:given to|of|for) (?:the )?`?/dev/shm`?[^\n]{0,40}?\b(?:worked|works|fine|fixed)\b"
            # "the problem went away when i updated my docker-compose.yaml to include shm_size";
            # Chromium's switch named as the fix: 'appendSwitch("disable-dev-shm-usage"); to
            # fix the problem'.
            r"|\b(?:problem|issue|error|crash\w{0,2}) went away when\b[^\n]{0,80}?"
            r"(?:--shm-size|\bshm[-_ ]size\b|/dev/shm)"
            r"|disable-dev-shm-usage\W{0,6}\)?;? to fix (?:the|this|it)\b"
            r"|\bafter (?:increasing|raising|enlarging|bumping) (?:the )?(?:size of )?`?"
            r"(?:/dev/shm|shm[-_ ]size|--shm-size)\b[^\n]{0,80}?\b(?:work(?:s|ed|ing)"
            r"|succeed\w{0,3}|pass(?:es|ed)|runs? fine|ran fine)\b",
            _I,
        ),
        unless=_p(
            r"\b(?:didn't|did not|doesn't|does not|still|no luck|if|try|trying|might|maybe"
            r"|could)\b|\?",
            _I,
        ),
    ),
    # Chrome's renderer out of memory where /dev/shm is named beside it: Chrome maps its
    # shared memory there, and a container's 64 MB default is what runs out.
    Family(
        "chrome_dev_shm",
        "shm_exhausted",
        "medium",
        _p(r"FATAL:memory\.cc\(\d{1,5}\)\] Out of memory\."),
        near=_p(
            r"/dev/shm|--shm-size|disable-dev-shm-usage"  # noqa: S108
            r"|--ipc[= ]host|\bIPC (?:settings|mode)\b",
            _I,
        ),
        span=12,
    ),
    # A bus error caught inside NCCL (its backtrace names it): NCCL's shared-memory
    # transport maps its segments in /dev/shm, and a full one faults on first touch.
    Family(
        "nccl_bus_error",
        "shm_exhausted",
        "medium",
        _p(r"\bCaught signal 7 \(Bus error\b"),
        near=_p(r"\bnccl\w{0,40}\(|libnccl\.so", re.IGNORECASE),
        span=15,
    ),
)
