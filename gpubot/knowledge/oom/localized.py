"""Memory failures in the words of other languages: a translated message or a localized libc.

People paste errors as their tools print them in their locale, or translate them for the
thread: a GPU out of memory in Chinese, Japanese or Korean ("显存不足", "GPU 0上出现内存不足",
a machine-translated "CUDA:没有记忆"), and ENOMEM as glibc words it in other locales
("无法分配内存", "メモリを確保できません", "Невозможно выделить память"). These families read
those words; the English ones are in *_families. Patterns follow the same bounds: literals
and bounded repeats.
"""

from __future__ import annotations

import re

from gpubot.knowledge.oom.scan import Family


def _p(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, re.ASCII | flags)


# "Memory is short" and "out of memory", as Chinese (simplified and traditional), Japanese
# and Korean write it, and the literal machine translation of "out of memory" ("no memory").
_SHORT_OF_MEMORY = (
    r"(?:内存|記憶體|显存|顯存)(?:不足|溢出|耗尽|用尽|用完)|没有(?:内存|记忆|显存)"
    r"|メモリ(?:不足|が不足)|메모리\s?부족"
)
# Video memory by name: the card's memory, whatever the sentence says of it.
_VIDEO_MEMORY_SHORT = r"(?:显存|顯存|显卡内存)(?:不足|溢出|耗尽|用尽|用完)"
# Host memory named on the line, or the card's memory said to be enough: the same words then
# speak of RAM, not the GPU's memory.
_HOST_NAMED = (
    r"\bCPU\b|\bRAM\b|主机内存|系统内存|物理内存|虚拟内存|主記憶體|システムメモリ"
    r"|(?:显存|顯存)(?:够|足够|充足|还有|還有)"
)

# A risk or a guess, not a report: "容易启动失败或推理 OOM" (prone to fail at start or OOM
# in inference), 可能 (may), 避免 and 防止 (to avoid, to prevent).
CJK_RISK = r"\u5bb9\u6613|\u53ef\u80fd|\u907f\u514d|\u9632\u6b62"

LOCALIZED_GPU_OOM: tuple[Family, ...] = (
    Family(
        "gpu_oom_localized",
        "cuda_oom",
        "medium",
        _p(
            _VIDEO_MEMORY_SHORT
            + r"|\b(?:GPU|CUDA|cuda|gpu|NPU|npu)\b[^\n]{0,40}?(?:"
            + _SHORT_OF_MEMORY
            + ")"
            # Paddle's "Cannot allocate … on GPU 0", as its reporters translate it.
            r"|无法在\s?(?:GPU|gpu)\s?\d{1,3}\s?上分配"
        ),
        # Nor a question ("这个问题是显存溢出吗", with its full-width question mark): a guess.
        unless=_p(_HOST_NAMED + r"|吗|嗎|ですか|[\uff1f?]|" + CJK_RISK, re.IGNORECASE),
    ),
    # An OOM reported in Chinese ("报错OOM", "出现 OOM", "推理OOM", "还是会OOM") beside the card
    # named or its memory (显存, 显卡, an A100): the card's memory.
    Family(
        "gpu_oom_localized",
        "cuda_oom",
        "medium",
        _p(
            r"(?:\u62a5\u9519|\u51fa\u73b0|\u53d1\u751f|\u63a8\u7406|\u8bad\u7ec3|\u4f1a)"
            r"\s?(?:\u65f6)?\s?OOM\b"
        ),
        near=_p(r"\u663e\u5b58|\u986f\u5b58|\u663e\u5361|\u986f\u5361|\b(?:A100|H100|GPU|VRAM)\b"),
        span=3,
        # ... not a condition: "使用bf16的话会OOM" (if bf16 were used, it would OOM).
        unless=_p(
            _HOST_NAMED + r"|\u5185\u5b58|\u5167\u5b58|\u7684\u8bdd|\u5982\u679c|" + CJK_RISK,
            re.IGNORECASE,
        ),
    ),
)

# glibc's strerror(ENOMEM) in common locales: the kernel refused a host allocation.
LOCALIZED_HOST_OOM: tuple[Family, ...] = (
    Family(
        "host_allocation_refused",
        "host_oom_killed",
        "medium",
        _p(
            r"无法分配内存|無法配置記憶體|メモリを確保できません|메모리를 할당할 수 없습니다"
            r"|Невозможно выделить память|Nicht genügend Hauptspeicher verfügbar"
            r"|Ne peut allouer de la mémoire|Impossible d'allouer de la mémoire"
            r"|No se puede asignar memoria|Impossibile allocare memoria"
            r"|Não foi possível alocar memória"
        ),
        # Memory locked for RDMA or pinned for the GPU fails with the same words.
        unless=_p(r"\bibv_\w{1,40}|mr_reg|reg_mr|memlock|\bmlock|pinned", re.IGNORECASE),
    ),
    # The system killing a process on a memory shortage, said in a sentence: "OSがメモリ不足を
    # 検知した瞬間…killをしてしまいます", "内存不足被系统杀死", "메모리 부족으로 kill".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"(?:メモリ不足|メモリ使い過ぎ"
            r"|内存不足|內存不足|메모리 부족)"
            r"[^\n]{0,40}?(?:[Kk]ill|強制終了|被杀|杀死|被殺"
            r"|강제 종료)"
        ),
        # The GPU's memory (显存, VRAM) running short is not the host's.
        unless=_p(r"显存|顯存|VRAM|GPU|CUDA", re.IGNORECASE),
    ),
    # The OOM killer named as what killed the process: "会被系统OOM杀进程" (the system's OOM
    # kills the process), "被OOM killer杀掉", "OOM杀死了进程".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"被\s?(?:系统|系統|内核|內核|linux|Linux)?\s?(?:的\s?)?OOM(?:[ _-]?[Kk]iller)?\s?"
            r"(?:杀|殺|[Kk]ill)"
            r"|OOM(?:[ _-]?[Kk]iller)?\s?(?:杀|殺)(?:死|掉)?(?:了)?(?:进程|進程)"
            # ... in Japanese: "OOM Killerで強制終了", "OOM Killerによって強制終了される".
            r"|OOM(?:[ _-]?[Kk]iller)?\s?(?:で|によって|により)\s?(?:強制)?(?:終了|停止|kill|殺)"
            # "随机出现 OOM killer 失败退出" (the OOM killer appears and it fails and exits).
            r"|OOM[ _-]?[Kk]iller\s?(?:\u5931\u8d25\u9000\u51fa|\u5bfc\u81f4\u9000\u51fa)"
            # ... in Korean: "OOM(Out of Memory)으로 인한 process kill" (a process kill due to
            # OOM), as a node's event log shows it.
            r"|OOM(?:\(Out of Memory\))?\s?(?:\uc73c\ub85c|\ub85c) \uc778\ud55c (?:process |"
            r"\ud504\ub85c\uc138\uc2a4 )?(?:kill|\ud0ac|\uc885\ub8cc)"
        ),
        # ... not a checklist's row that found none: "无 `oom-kill` … 没发生" (did not happen).
        unless=_p(
            r"显存|顯存|VRAM|GPU|CUDA|没发生|沒發生|没有发生|沒有發生|未发生|未發生|排除"
            r"|(?:无|無)\s?`?oom",
            re.IGNORECASE,
        ),
    ),
    # Host memory filling up, then the kill, in one sentence: "mem会用完" (mem gets used up)
    # then "自动kill", "内存会占用越来越多" (memory use keeps growing) then "进程被Killed".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"(?:内存|內存|\bmem\b|\bRAM\b)(?:会|會|就)?(?:占用|使用)?"
            r"(?:用完|耗完|占满|佔滿|耗尽|爆了|爆掉|越来越多|越來越多|满了|滿了|已满|已滿|用满|用滿)"
            r"[^\n]{0,30}?(?:[Kk]ill|被杀|杀死|被殺|退出了)"
            # "系统内存满了, 然后程序被终止" (memory full, then the program was ended), and the
            # kill first: "直接被杀的确是训着训着内存就超了" (the kill was the memory going over).
            r"|(?:\u5185\u5b58|\u5167\u5b58)(?:\u5c31)?(?:\u6ee1\u4e86|\u6eff\u4e86|\u8d85\u4e86"
            r"|\u8d85\u9650)[^\n]{0,20}?\u88ab(?:\u7ec8\u6b62|\u7d42\u6b62|\u6740|\u6bba|kill)"
            r"|\u88ab(?:\u6740|\u6bba)[^\n]{0,20}?(?:\u5185\u5b58|\u5167\u5b58)(?:\u5c31)?"
            r"(?:\u8d85\u4e86|\u8d85\u9650|\u6ee1\u4e86|\u6eff\u4e86)",
            re.IGNORECASE,
        ),
        unless=_p(r"显存|顯存|VRAM|GPU|CUDA|或者|或是|还是|可能|也许|好像|似乎", re.IGNORECASE),
    ),
    # The swap squeezed until it overflowed, then the system's kill: "挤压交换空间并最终溢出\uff0c
    # 系统自动杀死了该进程". Swap is the host's whatever the reporter calls the memory.
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"(?:挤压|擠壓|占满|佔滿|耗尽|耗盡|用完)(?:了)?(?:交换空间|交換空間)[^\n]{0,20}?"
            r"(?:杀死|殺死|被杀|被殺|kill)"
        ),
        unless=_p(r"可能|也许|或许|好像|似乎|\uff1f|\?"),
    ),
    # Host memory told rising while the card's stays flat, beside the failure: "内存占用率一直在
    # 上涨\uff0c显存没有变化" (memory use keeps rising, the card's memory does not change).
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"(?:内存|內存)(?:占用|佔用|使用)?(?:率|量)?(?:一直|不断|不斷|持续|持續)(?:在)?"
            r"(?:上涨|上漲|增加|增长|增長|升高)[^\n]{0,12}?(?:显存|顯存)(?:没有|沒有|没|沒|无|無|不)"
            r"(?:变化|變化|增加|上涨|上漲)"
        ),
        near=_p(r"(?:内存|內存)不足|(?:内存|內存)溢出|\bkill|被杀|被殺|\bOOM\b", re.IGNORECASE),
        span=3,
    ),
    # The kill told with OOM as its cause: Korean "oom으로 죽게됩니다" (dies of OOM), Chinese
    # "因为OOM被杀" (killed because of OOM).
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(
            r"\b(?i:oom)\s?(?:으로|때문에)\s?(?:죽|종료|강제\s?종료)"
            r"|(?:因为|由于|因為|由於)\s?(?i:oom)\s?(?:被杀|被殺|被(?i:kill)|挂了|掛了)"
        ),
        unless=_p(r"显存|顯存|VRAM|GPU|CUDA|可能|也许|或许|아마|\uff1f|\?", re.IGNORECASE),
    ),
    # A kill, and the memory leak behind it named within a few lines: "训练过程中程序突然被杀死"
    # (the training was suddenly killed) answered "内存泄漏问题" (the memory leak problem).
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(r"(?:内存|內存)(?:泄漏|泄露|洩漏|洩露)"),
        near=_p(r"被杀死|被殺死|被杀|被殺|被(?i:kill)"),
        span=3,
        unless=_p(r"显存|顯存|VRAM|GPU|CUDA|可能|也许|或许|好像|似乎|\uff1f|\?", re.IGNORECASE),
    ),
    # The same said beside the kill it explains: "就是内存太小了" a few lines after torchrun's
    # "exitcode: -9".
    Family(
        "memory_kill_in_prose",
        "host_oom_killed",
        "medium",
        _p(r"(?:内存|內存)(?:太小|不够|不夠|不足)|メモリ(?:が)?(?:足りな|不足)|메모리가 부족"),
        near=_p(
            r"exitcode:? -9\b|exit code:? (?:137|-9)\b|return code\s{0,3}=?\s{0,3}-9\b"
            r"|\bKilled\b|\bSIGKILL\b",
            re.IGNORECASE,
        ),
        span=8,
        # Nor a guess: "looks like" (像是, 好像, 似乎), "maybe" (可能, 也许), "or" (或者, 还是),
        # "most likely" (大概率, 大概, 多半), or a question ("内存不足 \uff1f").
        unless=_p(
            r"显存|顯存|VRAM|GPU|CUDA|或者|或是|还是|かも|아니면|像是|好像|似乎|可能|也许|或许|估计"
            r"|大概|多半"
            r"|\uff1f|\?",
            re.IGNORECASE,
        ),
    ),
)
