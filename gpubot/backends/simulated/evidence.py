"""Evidence as the simulated node's agent would gather it: small, but shaped like the real
tools' output (nvidia-smi -q -x, the kernel's NVRM/Xid lines, a gzipped bug report)."""

from __future__ import annotations

import gzip
from datetime import datetime
from xml.sax.saxutils import escape

from gpubot.backends.simulated.state import ClusterState, SimNode
from gpubot.domain.fleet.cluster import GpuState
from gpubot.domain.gpus.evidence import EvidencePart
from gpubot.errors import PermanentStepError

DRIVER_VERSION = "550.54.15"
CUDA_VERSION = "12.4"
_XID_WORDS = {
    79: "GPU has fallen off the bus.",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU.",
    94: "Contained ECC error.",
    95: "Uncontained ECC error.",
}


def simulated_evidence(state: ClusterState, *, node: str, now: datetime) -> list[EvidencePart]:
    sim = state.node(node)
    if sim.evidence_failure:
        raise PermanentStepError(f"node agent on {node}: {sim.evidence_failure}")
    kernel = _kernel_lines(sim, now)
    return [
        EvidencePart(
            "nvidia-bug-report.log.gz",
            "ok",
            gzip.compress(_bug_report(sim, now, kernel), mtime=0),
            "nvidia-bug-report.sh (simulated)",
            0.4,
        ),
        EvidencePart("nvidia-smi-q.xml", "ok", _smi_xml(sim, now), "nvidia-smi -q -x", 0.2),
        EvidencePart("kernel-nvrm.log", "ok", kernel, "journalctl -k -b (NVRM/Xid lines)", 0.1),
    ]


def _bus(gpu: GpuState) -> str:
    return gpu.pci_bus_id or f"0000:{0x18 + gpu.index * 0x10:02x}:00.0"


def _kernel_lines(sim: SimNode, now: datetime) -> bytes:
    stamp = now.strftime("%Y-%m-%dT%H:%M:%S+0000")
    lines = [
        f"{stamp} {sim.name} kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  "
        f"{DRIVER_VERSION}  Release Build"
    ]
    for gpu in sim.gpus:
        for xid in gpu.xid_errors or ((79,) if gpu.lost else ()):
            words = _XID_WORDS.get(xid, "")
            lines.append(
                f"{stamp} {sim.name} kernel: NVRM: Xid (PCI:{_bus(gpu)}): {xid}, "
                f"pid='<unknown>', name=<unknown>, {words}".rstrip()
            )
    return "".join(line + "\n" for line in lines).encode()


def _smi_xml(sim: SimNode, now: datetime) -> bytes:
    gpus = "".join(
        f'\t<gpu id="{escape(_bus(g))}">\n'
        f"\t\t<product_name>{escape(g.name)}</product_name>\n"
        f"\t\t<uuid>{escape(g.uuid)}</uuid>\n"
        f"\t\t<minor_number>{g.index}</minor_number>\n"
        + (
            "\t\t<fb_memory_usage><total>Unknown Error</total></fb_memory_usage>\n"
            if g.lost
            else f"\t\t<fb_memory_usage><total>{g.memory_total_mib} MiB</total>"
            f"<used>{g.memory_used_mib} MiB</used></fb_memory_usage>\n"
            f"\t\t<temperature><gpu_temp>{g.temperature_c} C</gpu_temp></temperature>\n"
            f"\t\t<gpu_power_readings><power_draw>{g.power_draw_w:.2f} W</power_draw>"
            f"<current_power_limit>{g.power_limit_w:.2f} W</current_power_limit>"
            "</gpu_power_readings>\n"
        )
        + "\t</gpu>\n"
        for g in sim.gpus
    )
    return (
        '<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
        f"<nvidia_smi_log>\n\t<timestamp>{now:%a %b %d %H:%M:%S %Y}</timestamp>\n"
        f"\t<driver_version>{DRIVER_VERSION}</driver_version>\n"
        f"\t<cuda_version>{CUDA_VERSION}</cuda_version>\n"
        f"\t<attached_gpus>{len(sim.gpus)}</attached_gpus>\n{gpus}</nvidia_smi_log>\n"
    ).encode()


def _bug_report(sim: SimNode, now: datetime, kernel: bytes) -> bytes:
    head = (
        "____________________________________________\n\n"
        f"Start of NVIDIA bug report log file.  Host: {sim.name}\n"
        f"nvidia-bug-report.sh Version: 34197328\nDate: {now:%a %b %d %H:%M:%S UTC %Y}\n"
        f"NVIDIA driver version: {DRIVER_VERSION}\n\n"
        "____________________________________________\n\n*** dmesg (NVRM lines)\n"
    )
    return head.encode() + kernel
