"""The runs table's reads on an alert's path, as the runs an install keeps pile up.

Prints one JSON line. Runs are kept for the record, so a year of incidents leaves tens of
thousands of rows. For each size (`--small`, 1,000, the baseline; `--kept`, 100,000) a
fresh SQLite store in a temporary directory gets that many finished runs over 1,500 nodes
(written straight into the table, as a long-lived install has them), then answers `--reads`
(200) of each read the engine makes:

- an alert's dedupe read (`runs_on_target`: this runbook's runs on the alert's node since
  the attempt window opened, and those still active), once per alert;
- the leader's round read (`list_runs` of the held runs), once per leader round.

Reported: the mean milliseconds per read at each size, and the ratio kept/small. Target:
the ratio at most 2 (a read costs the same however many runs are kept).
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from _report import at_most, emit
from sqlalchemy import create_engine, text

from gpubot.backends.store import open_store
from gpubot.domain.runbooks.runs import RunStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)
NODES = 1500
ACTIVE = [RunStatus.RUNNING, RunStatus.WAITING_APPROVAL, RunStatus.HELD, RunStatus.NEEDS_HUMAN]
INSERT = text(
    "INSERT INTO runs (id, runbook, incident_id, cluster, target, requested_by, status, "
    "dry_run, context, created_at, updated_at, note) VALUES (:id, 'xid79', NULL, 'prod', "
    ":target, 'alertmanager', 'succeeded', 0, '{}', :at, :at, '')"
)


async def _mean_ms(read: Callable[[int], Awaitable[Any]], reads: int) -> float:
    await read(0)  # the statement compiled and the connection open before the clock
    started = time.perf_counter()
    for i in range(reads):
        await read(i)
    return round((time.perf_counter() - started) * 1000 / reads, 3)


async def measure(kept: int, reads: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'gpubot.db'}"
        store = open_store(url)
        engine = create_engine(url)
        with engine.begin() as conn:
            conn.execute(
                INSERT,
                [
                    {
                        "id": f"run-{i:010d}",
                        "target": f"gpu-node-{i % NODES}",
                        "at": (T0 + timedelta(seconds=i)).isoformat(),
                    }
                    for i in range(kept)
                ],
            )
        engine.dispose()
        window = T0 + timedelta(seconds=kept)  # the attempt window: the last hour or so

        async def dedupe(i: int) -> Any:
            return await store.runs_on_target(
                runbook="xid79", target=f"gpu-node-{i % NODES}", since=window, active=ACTIVE
            )

        async def leader(_i: int) -> Any:
            return await store.list_runs(statuses=(RunStatus.HELD,))

        try:
            return {
                "dedupe_read_ms": await _mean_ms(dedupe, reads),
                "leader_read_ms": await _mean_ms(leader, reads),
            }
        finally:
            await store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="runs kept, the baseline")
    parser.add_argument("--kept", type=int, default=100_000, help="runs kept, measured")
    parser.add_argument("--reads", type=int, default=200)
    args = parser.parse_args()
    small = asyncio.run(measure(args.small, args.reads))
    kept = asyncio.run(measure(args.kept, args.reads))
    ratios = {k: round(kept[k] / small[k], 2) if small[k] else 0.0 for k in small}
    emit(
        "runs_kept",
        targets={
            f"{k}_kept_over_small": at_most(ratios[k], 2.0)
            for k in ("dedupe_read_ms", "leader_read_ms")
        },
        store="sqlite",
        reads=args.reads,
        kept={"runs": args.kept, **kept},
        baseline={"runs": args.small, **small},
        kept_over_small=ratios,
    )


if __name__ == "__main__":
    main()
