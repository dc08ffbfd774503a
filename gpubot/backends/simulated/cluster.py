"""SimulatedCluster: an in-process GPU cluster's one shared state, behind one adapter per
port (`kube`, `agent`, `metrics`)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from gpubot.backends.simulated.base import OnState
from gpubot.backends.simulated.fleet import default_fleet
from gpubot.backends.simulated.gpus import SimulatedAgent
from gpubot.backends.simulated.kube import SimulatedKube
from gpubot.backends.simulated.metrics import SimulatedMetrics
from gpubot.backends.simulated.state import ClusterState, clone_state
from gpubot.errors import ConfigError
from gpubot.ports import ClusterPorts


class SimulatedCluster:
    """A GPU cluster in memory, optionally backed by a JSON file that outlives the process.

    When `state_path` exists it wins over `state`: the file is the live cluster, and a
    restarted bot must see it as it was, as a real cluster outlives the bot. The ports read
    and change it through `kube` (SimulatedKube), `agent` (SimulatedAgent) and `metrics`
    (SimulatedMetrics); scenarios and tests change it through `mutation()`.
    """

    def __init__(
        self,
        state: ClusterState | None = None,
        *,
        name: str = "sim",
        state_path: Path | None = None,
    ) -> None:
        self.name = name
        self._path = state_path
        self._lock = threading.Lock()
        self._seen: tuple[int, int] | None = None
        # Node Events the bot posted: (node, type, reason, message); not persisted.
        self.node_events: list[tuple[str, str, str, str]] = []
        if state_path is not None and state_path.exists():
            self._state = self._load(state_path)
        else:
            self._state = state if state is not None else ClusterState()
            self._save()
        # One adapter per port, all over this one state.
        self.kube = SimulatedKube(self)
        self.agent = SimulatedAgent(self)
        self.metrics = SimulatedMetrics(self)

    @classmethod
    def default(
        cls, *, name: str = "sim", state_path: Path | None = None, seed: int = 7
    ) -> SimulatedCluster:
        if state_path is not None and state_path.exists():
            return cls(name=name, state_path=state_path)
        return cls(default_fleet(seed=seed), name=name, state_path=state_path)

    def snapshot(self) -> ClusterState:
        """A copy of the whole state; change the cluster through `mutation()` or scenarios."""
        with self._lock:
            return clone_state(self._current())

    def node_names(self) -> list[str]:
        with self._lock:
            return list(self._current().nodes)

    @contextlib.contextmanager
    def mutation(self) -> Iterator[ClusterState]:
        """Change the state as one transaction: all of it is kept and written, or none."""
        with self._lock:
            # Work on a copy so a change that fails half-way leaves the cluster untouched.
            draft = clone_state(self._current())
            yield draft
            self._state = draft
            self._save()

    @contextlib.contextmanager
    def reading(self) -> Iterator[ClusterState]:
        """The current state under the lock, to read and not change."""
        with self._lock:
            yield self._current()

    def ports(self) -> ClusterPorts:
        """The cluster's ports for the engine, each an adapter over this one state."""
        return ClusterPorts(
            name=self.name,
            kube=self.kube,
            agent=self.agent,
            metrics=self.metrics,
            kernel_logs=self.agent,
        )

    # Persistence

    def _current(self) -> ClusterState:
        # Another process (a demo command injecting a fault) may have replaced the file.
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                stat = self._path.stat()
                if (stat.st_ino, stat.st_mtime_ns) != self._seen:
                    self._state = self._load(self._path)
        return self._state

    def _load(self, path: Path) -> ClusterState:
        stat = path.stat()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path} is not a simulated cluster state: {exc}") from exc
        state = ClusterState.from_dict(data)
        self._seen = (stat.st_ino, stat.st_mtime_ns)
        return state

    def _save(self) -> None:
        # Temp file + os.replace: a SIGKILL at any point leaves the old or the new state,
        # never half of one. No fsync: a killed process, not a lost machine, is what we model.
        # Blocking I/O on the event loop is fine here: the file is small and local.
        if self._path is None:
            return
        self._path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self._state.to_dict(), indent=1)
        fd, tmp = tempfile.mkstemp(dir=self._path.parent, prefix=f".{self._path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, self._path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        stat = self._path.stat()
        self._seen = (stat.st_ino, stat.st_mtime_ns)


def simulated_state(ports: ClusterPorts) -> SimulatedCluster:
    """The simulated cluster behind a cluster's ports, for the demo and tests to inject
    faults into; TypeError when the cluster is not simulated."""
    if not isinstance(ports.kube, OnState):
        raise TypeError(f"cluster {ports.name!r} is not a simulated cluster")
    return ports.kube.cluster
