#!/usr/bin/env python3
"""Read-only GPU smoke test: everything the node agent reads through NVML, printed as JSON.

Run it on a machine with an NVIDIA GPU:  python scripts/gpu_smoke.py [--xid-wait SECONDS]
It never changes a setting: no power limit, no reset, no clocks, no persistence mode. It only
calls NvmlDriver's read methods (system, gpus, processes, and optionally wait_xid).
Exit status: 0 when NVML answered, 1 when it could not start (the JSON says why).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from typing import Any

from gpubot.agent.driver import GpuDriverError
from gpubot.agent.nvml import NvmlDriver


def read_everything(driver: NvmlDriver, *, xid_wait_s: float) -> dict[str, Any]:
    started = time.perf_counter()
    gpus = driver.gpus()
    out: dict[str, Any] = {
        "system": asdict(driver.system()),
        "gpus": [g.as_json() for g in gpus],
        "processes": {},
    }
    for gpu in gpus:
        try:
            out["processes"][str(gpu.index)] = [
                asdict(p) for p in driver.processes(index=gpu.index)
            ]
        except GpuDriverError as exc:
            out["processes"][str(gpu.index)] = {"error": str(exc), "kind": exc.kind}
    if xid_wait_s > 0:
        try:
            event = driver.wait_xid(timeout_s=xid_wait_s)
            out["xid_event"] = (
                None if event is None else {**asdict(event), "at": event.at.isoformat()}
            )
        except GpuDriverError as exc:
            out["xid_event"] = {"error": str(exc), "kind": exc.kind}
    out["read_seconds"] = round(time.perf_counter() - started, 3)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--xid-wait",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="also register for critical XID events and wait this long for one (default: no)",
    )
    args = p.parse_args(argv)
    try:
        driver = NvmlDriver()
    except GpuDriverError as exc:
        print(json.dumps({"error": str(exc), "kind": exc.kind}, indent=2))
        return 1
    try:
        print(json.dumps(read_everything(driver, xid_wait_s=args.xid_wait), indent=2))
    finally:
        driver.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
