"""Real parts for the reliability tests: gpubot serve, Alertmanager, a PostgreSQL schema.

Every process is started here and stopped here by its own PID; every PostgreSQL connection
gpubot opens carries a per-test application_name, so a test can cut exactly its own.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import pytest
import yaml
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError
from waiting import answers, wait_until

from gpubot.backends.store import SqlStore, open_store

__all__ = ["answers", "wait_until"]

PG_URL = os.environ.get("GPUBOT_TEST_PG_URL", "postgresql+psycopg://root@127.0.0.1:5432/test")


def missing(reason: str) -> NoReturn:
    """A real part is not there: skip on a laptop, fail in CI (CI=true)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def tool(name: str) -> str:
    """A Debian binary (packages prometheus, prometheus-alertmanager)."""
    path = shutil.which(name)
    if path is None:
        missing(f"{name} not installed (Debian packages prometheus, prometheus-alertmanager)")
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Procs:
    """Processes this test started; stop() ends each by its PID, nothing else."""

    started: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def spawn(self, args: list[str], *, log: Path, **kw: Any) -> subprocess.Popen[bytes]:
        handle = log.open("ab")
        try:
            p = subprocess.Popen(args, stdout=handle, stderr=subprocess.STDOUT, **kw)
        finally:
            handle.close()  # the child has its own copy
        self.started.append(p)
        self.logs.append(log)
        return p

    @staticmethod
    def kill(p: subprocess.Popen[bytes]) -> None:
        """SIGKILL: no shutdown code runs, as when the node or the OOM killer takes the pod."""
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)

    def stop(self) -> None:
        for p in self.started:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.kill(p.pid, signal.SIGKILL)
                    p.wait(timeout=10)

    def tail(self) -> str:
        """The end of every log, for an assertion message."""
        return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for log in self.logs)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}
    return {**env, **extra}


def serve(
    procs: Procs, config: Path, *, port: int, name: str = "gpubot", **env: str
) -> subprocess.Popen[bytes]:
    """`gpubot serve` as operators run it, answering /healthz before this returns."""
    p = procs.spawn(
        [sys.executable, "-m", "gpubot.cli", "serve", "--config", str(config), "--port", str(port)],
        log=config.parent / f"{name}.log",
        cwd=config.parent,
        env=clean_env(**env),
    )
    wait_until(
        lambda: answers(f"http://127.0.0.1:{port}/healthz"),
        f"{name} to answer /healthz",
        proc=p,
        output=config.parent / f"{name}.log",
    )
    return p


def write_config(path: Path, **sections: Any) -> Path:
    base: dict[str, Any] = {"slack": {"mode": "off"}}
    path.write_text(yaml.safe_dump({**base, **sections}))
    return path


def start_alertmanager(
    procs: Procs, workdir: Path, *, webhook: str, group_interval: str = "1s"
) -> str:
    """The Debian Alertmanager on loopback, alone (no cluster), routing to `webhook`."""
    binary = tool("prometheus-alertmanager")
    port = free_port()
    config = {
        "route": {
            "receiver": "gpubot",
            "group_by": ["alertname", "cluster", "Hostname"],
            "group_wait": "1s",
            "group_interval": group_interval,
            "repeat_interval": "1h",
        },
        "receivers": [
            {
                "name": "gpubot",
                "webhook_configs": [{"url": webhook, "send_resolved": True, "max_alerts": 0}],
            }
        ],
    }
    (workdir / "am.yaml").write_text(yaml.safe_dump(config))
    am = procs.spawn(
        [
            binary,
            f"--config.file={workdir / 'am.yaml'}",
            f"--storage.path={workdir / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ],
        log=workdir / "alertmanager.log",
    )
    url = f"http://127.0.0.1:{port}"
    wait_until(
        lambda: answers(f"{url}/-/ready"),
        "alertmanager to be ready",
        proc=am,
        output=workdir / "alertmanager.log",
    )
    return url


@dataclass
class PgSchema:
    """A fresh schema in the test database, and the URL gpubot uses to reach it."""

    schema: str
    application_name: str
    engine: Engine

    @property
    def url(self) -> str:
        """For gpubot's config: search_path and a distinct application_name in the URL."""
        options = quote(f"-csearch_path={self.schema}")
        return f"{PG_URL}?options={options}&application_name={self.application_name}"

    def open(self) -> SqlStore:
        return open_store(PG_URL, schema=self.schema)

    def terminate_gpubot(self) -> int:
        """End every backend gpubot has open (only ours, by application_name)."""
        with self.engine.begin() as conn:
            rows = conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                    "AND application_name = :name"
                ),
                {"name": self.application_name},
            ).all()
        return len(rows)

    def drop(self) -> None:
        self.terminate_gpubot()
        with self.engine.begin() as conn:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE'))
        self.engine.dispose()


def pg_schema() -> PgSchema:
    """A new schema, or skip (fail in CI) when PostgreSQL does not answer."""
    engine = create_engine(PG_URL, connect_args={"connect_timeout": 3})
    try:
        with engine.begin() as conn:
            tag = uuid.uuid4().hex[:12]
            conn.execute(text(f'CREATE SCHEMA "rel_{tag}"'))
    except OperationalError as exc:
        engine.dispose()
        missing(f"PostgreSQL is not reachable at {PG_URL}: {exc.orig}")
    return PgSchema(schema=f"rel_{tag}", application_name=f"gpubot-rel-{tag}", engine=engine)
