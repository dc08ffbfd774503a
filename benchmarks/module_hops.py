"""Module hops of one XID 79 alert, from the Alertmanager webhook to the approved drain.

Prints one JSON line: the current checkout ("here") and a baseline commit ("baseline",
default d241402) measured in the same run; the baseline is this script run with --only-here
in a child process on a detached git worktree of that commit (made in a temp dir, removed
after), PYTHONPATH first so that the child imports gpubot from the worktree (checked).

The flow is the demo's (gpubot/demo/run.py), silent: the simulated cluster "sim" with XID 79
on the demo's node and GPU, the demo's alert fixture POSTed in-process to /alertmanager
(httpx.ASGITransport over web.app.create_app), each gated step approved through the
service's vote() as the demo's simulated approver; each checkout loads its own runbooks/
(the shipped xid79). The window opens right before the POST and closes when the node.drain
action's run function returns (its coroutine's final return, not a suspension).

A profile hook (sys.setprofile, threading.setprofile) sees every Python call; only frames
whose module __name__ is gpubot or under it count, the simulated backend included
(simulated_hops: the edges from or to it). A coroutine or generator resuming is no call.
A hop is a call into gpubot module B from a frame whose nearest gpubot frame up the stack
(f_back) is in a module A != B. A call with no gpubot frame above it (a task's first step, a
store call in a worker thread, the benchmark's vote) enters its module, no hop ("entries").
The hook is paused while the benchmark reads the store (the run's status, the approval to
vote on), which it does only after service.wait_idle(), when no run work is in flight.

Figures, first following the flow (follow_hops, follow_modules, follow_revisits): the
reading walk's calls alone, between the flow's own modules (web, engine, actions, the store,
the console), the domain's types and rules, errors, ports and the simulated cluster read as
known. Then the reading walk, the path a maintainer follows reading the code: each
function is read once, at its first call, and only from a function being read (a function
read before, or called from one read before, is known: nothing inside it is followed); a
call that crosses into another module is a hop, and so is its final return back to the
caller's module (walk_hops, walk_modules, walk_revisits: hops into a module already visited,
every return among them). Then the call graph: hops, distinct (A, B) edges in order of first
use; modules, distinct gpubot modules entered; revisits, edges whose B was already entered
when the edge was first used;
dynamic_hops, every hop event; dynamic_revisits, hop events into a module already entered.

    .venv/bin/python benchmarks/module_hops.py [--baseline-commit d241402] [--edges]
"""

from __future__ import annotations

import argparse
import asyncio
import dis
import hashlib
import inspect
import io
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from importlib import resources
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, TypeGuard

import httpx

FLOW = "xid79 webhook to approved drain"
SIMULATED = "gpubot.backends.simulated"
KNOWN = ("gpubot.domain", "gpubot.errors", "gpubot.ports", SIMULATED)
JSON = {"content-type": "application/json"}
RESUME = dis.opmap["RESUME"]
RETURNS = {dis.opmap[n] for n in ("RETURN_VALUE", "RETURN_CONST") if n in dis.opmap}


def _ours(name: object) -> TypeGuard[str]:
    return isinstance(name, str) and (name == "gpubot" or name.startswith("gpubot."))


class Tracer:
    """The profile hook: gpubot calls while active, until `end`'s frame returns for good."""

    def __init__(self, end: CodeType) -> None:
        self.end, self.active, self.done = end, False, False
        self.entered: dict[str, None] = {}
        self.edges: dict[tuple[str, str], bool] = {}
        self.dynamic_hops = self.dynamic_revisits = self.entries = 0
        # The reading walk: each function read once, in and back out across modules.
        self.read: set[CodeType] = set()
        self.frames: dict[int, tuple[bool, str | None]] = {}  # id -> (read, module it returns to)
        self.walked: set[str] = set()
        self.walk: list[tuple[str, str, bool]] = []
        self.followed: list[tuple[str, str]] = []  # the walk's calls, in order, no returns

    def resume(self) -> None:
        self.active = not self.done

    def __call__(self, frame: FrameType, event: str, arg: object) -> None:
        if not self.active or not _ours(module := frame.f_globals.get("__name__")):
            return
        code = frame.f_code
        if event == "return":
            if code.co_code[frame.f_lasti] not in RETURNS:
                return  # a coroutine or generator suspended, not finished
            read, back = self.frames.pop(id(frame), (False, None))
            if read and back is not None and back != module:
                self.walk.append((module, back, True))
            if code is self.end:
                self.active, self.done = False, True
            return
        op = code.co_code[frame.f_lasti : frame.f_lasti + 2]
        if event != "call" or (op[0] == RESUME and op[1] & 3):  # a resumption
            return
        caller = frame.f_back
        while caller is not None and not _ours(caller.f_globals.get("__name__")):
            caller = caller.f_back
        seen = module in self.entered
        source = None if caller is None else str(caller.f_globals["__name__"])
        if source is None:
            self.entries += 1
        elif source != module:
            self.dynamic_hops += 1
            self.dynamic_revisits += seen
            self.edges.setdefault((source, module), seen)
        self.entered.setdefault(module, None)
        self._read(frame, module, source, caller)

    def _read(self, frame: FrameType, module: str, source: str | None, caller: Any) -> None:
        """A reader follows a call only into a function not read before, and only from a
        function being read; crossing into another module is a hop, and so is coming back."""
        parent_read = caller is None or self.frames.get(id(caller), (True, None))[0]
        read = parent_read and frame.f_code not in self.read
        self.frames[id(frame)] = (read, source)
        if not read:
            return
        self.read.add(frame.f_code)
        if source is not None and source != module:
            self.walk.append((source, module, module in self.walked))
            self.followed.append((source, module))
        self.walked.update(m for m in (source, module) if m is not None)

    def follow(self) -> dict[str, int]:
        """The walk's calls alone, between the flow's own modules: the domain's types and
        rules, errors, ports and the simulated cluster are read as known."""
        seen: set[str] = set()
        hops = revisits = 0
        for source, module in self.followed:
            if source.startswith(KNOWN) or module.startswith(KNOWN):
                continue
            hops += 1
            revisits += module in seen
            seen.update((source, module))
        return {"follow_hops": hops, "follow_modules": len(seen), "follow_revisits": revisits}

    def figures(self) -> dict[str, Any]:
        return {
            **self.follow(),
            "walk_hops": len(self.walk),
            "walk_modules": len(self.walked),
            "walk_revisits": sum(r for _a, _b, r in self.walk),
            "hops": len(self.edges),
            "modules": len(self.entered),
            "revisits": sum(self.edges.values()),
            "dynamic_hops": self.dynamic_hops,
            "dynamic_revisits": self.dynamic_revisits,
            "entries": self.entries,
            "simulated_hops": sum(SIMULATED in a + " " + b for a, b in self.edges),
            "first_module": next(iter(self.entered), None),
            "window_closed_at_drain": self.done,
        }


def _git(root: Path, *args: str) -> str:
    cmd = ["git", "--no-optional-locks", "-C", str(root), *args]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip()


async def _settle(app: Any, tracer: Tracer, node: str, statuses: tuple[Any, ...]) -> Any:
    """The node's run once it is in one of `statuses`; the hook paused only for the read."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30.0
    while loop.time() < deadline:
        tracer.resume()
        await app.service.wait_idle()
        tracer.active = False
        runs = [r for r in await app.store.list_runs() if r.target == node]
        if runs and runs[0].status in statuses:
            return runs[0]
        tracer.resume()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the run on {node} did not reach {[s.value for s in statuses]}")


async def _flow(app: Any, tracer: Tracer) -> None:
    from gpubot.backends import simulated
    from gpubot.backends.simulated.scenarios import inject_xid
    from gpubot.demo import run as demo
    from gpubot.web.app import create_app

    try:
        from gpubot.domain.runbooks.runs import RunStatus, StepStatus
    except ImportError:  # a baseline from before the domain's sub-packages
        from gpubot.domain.runs import RunStatus, StepStatus  # type: ignore[no-redef]

    settled = tuple(s for s in RunStatus if s not in (RunStatus.RUNNING, RunStatus.HELD))
    state = getattr(simulated, "simulated_state", lambda ports: ports.kube)  # older: .kube
    inject_xid(state(app.clusters["sim"]), node=demo.NODE, gpu=demo.GPU, xid=79)
    body = resources.files("gpubot.demo").joinpath("xid79_firing.json").read_bytes()
    web = create_app(app.service, max_body_bytes=app.settings.web.max_body_bytes)
    vote = {"user": demo.APPROVER, "decision": "approve", "via": {"via": "simulated approver"}}
    transport = httpx.ASGITransport(app=web)
    async with httpx.AsyncClient(transport=transport, base_url="http://gpubot") as client:
        tracer.resume()
        reply = await client.post("/alertmanager", content=body, headers=JSON)
        run = await _settle(app, tracer, demo.NODE, settled)
        if reply.status_code >= 300:
            raise RuntimeError(f"the webhook answered {reply.status_code} {reply.text}")
        while not tracer.done and run.status is RunStatus.WAITING_APPROVAL:
            request = (await app.store.approvals_for(run.id))[-1]
            tracer.resume()
            outcome = await app.service.vote(approval_id=request.id, **vote)
            tracer.active = False
            if not outcome.accepted:
                raise RuntimeError(f"approval of {request.step_id} refused: {outcome.message}")
            run = await _settle(app, tracer, demo.NODE, settled)
    steps = {s.step_id: s.status for s in await app.store.steps(run.id)}
    if not tracer.done or steps.get("drain") is not StepStatus.SUCCEEDED:
        raise RuntimeError(f"the drain did not succeed in the window: run {run.status}, {steps}")


async def _session(tracer: Tracer, runbooks: Path) -> None:
    """The demo's settings on a fresh store and simulated cluster, the flow, then closed."""
    from gpubot.config import load_settings
    from gpubot.demo import run as demo
    from gpubot.wiring import build_app

    with tempfile.TemporaryDirectory(prefix="gpubot-hops-") as tmp:
        settings = load_settings(
            None,
            store={"url": f"sqlite:///{tmp}/gpubot.db"},
            clusters=[{"name": "sim", "backend": "simulated", "state_file": f"{tmp}/sim.json"}],
            policy={"groups": {"oncall": {"users": [demo.APPROVER]}}},
            slack={"mode": "off"},
            runbooks={"builtin": False, "dirs": [str(runbooks)]},
        )
        app = build_app(settings, out=io.StringIO())
        try:
            await _flow(app, tracer)
        finally:
            tracer.active = False
            await app.aclose()


def measure() -> tuple[dict[str, Any], list[tuple[str, str, bool]]]:
    """This checkout's figures, and its edges in first-use order (with revisit flags)."""
    import gpubot
    from gpubot.engine.registry import builtin_registry

    source = Path(gpubot.__file__).resolve().parent
    runbooks = source.parent / "runbooks"
    drain = inspect.unwrap(builtin_registry().get("node.drain").run)
    tracer = Tracer(drain.__code__)
    started = time.perf_counter()
    sys.setprofile(tracer)
    threading.setprofile(tracer)
    try:
        asyncio.run(_session(tracer, runbooks))
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    wall = time.perf_counter() - started
    dirty = _git(source.parent, "status", "--porcelain", "--", "gpubot", "runbooks")
    figures = {
        **tracer.figures(),
        "commit": _git(source.parent, "rev-parse", "--short", "HEAD"),
        "uncommitted_changes": bool(dirty),
        "source": str(source),
        "xid79_flow_sha256": flow_digest(runbooks / "xid79.yaml"),
        "wall_s": round(wall, 2),
    }
    return figures, [(a, b, seen) for (a, b), seen in tracer.edges.items()]


def flow_digest(path: Path) -> str:
    """SHA-256 of the part of the runbook the traced flow runs: its triggers, parameters and
    steps up to the drain. Steps after the drain may differ between the two checkouts
    without making the flows incomparable."""
    import yaml

    runbook = yaml.safe_load(path.read_text())
    steps = runbook["steps"]
    upto = next(i for i, s in enumerate(steps) if s["id"] == "drain") + 1
    part = {"triggers": runbook["triggers"], "params": runbook["params"], "steps": steps[:upto]}
    return hashlib.sha256(json.dumps(part, sort_keys=True).encode()).hexdigest()


def print_edges(label: str, edges: list[tuple[str, str, bool]]) -> None:
    lines = [f"{label}: {len(edges)} edges, first use first (* into a module entered before)"]
    lines += [f"  {i:3d} {'*' if r else ' '} {a} -> {b}" for i, (a, b, r) in enumerate(edges, 1)]
    print("\n".join(lines), file=sys.stderr)


def baseline(commit: str, *, edges: bool) -> dict[str, Any]:
    """The same measurement in a child process on a worktree of `commit`, then removed."""
    repo = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory(prefix="gpubot-hops-") as tmp:
        tree = Path(tmp).resolve() / "base"
        _git(repo, "worktree", "add", "--detach", "--quiet", str(tree), commit)
        try:
            path = os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p)
            env = {**os.environ, "PYTHONPATH": path}
            cmd = [sys.executable, __file__, "--only-here", *(["--edges"] if edges else [])]
            out = subprocess.run(cmd, env=env, cwd=tmp, stdout=subprocess.PIPE, text=True)
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))
    if out.returncode:
        raise RuntimeError(f"the baseline run failed (exit {out.returncode})")
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])["here"]
    if not Path(result["source"]).is_relative_to(tree):
        raise RuntimeError(f"the child imported gpubot from {result['source']}, not {tree}")
    return {**result, "commit": commit, "resolved": result["commit"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-commit", default="d241402", help="default d241402")
    parser.add_argument("--only-here", action="store_true", help="measure this checkout only")
    parser.add_argument("--edges", action="store_true", help="the ordered edges on stderr")
    args = parser.parse_args()
    here, edges = measure()
    if args.edges:
        print_edges(f"gpubot at {here['source']} ({here['commit']})", edges)
    record: dict[str, Any] = {"benchmark": "module_hops", "flow": FLOW, "here": here}
    if not args.only_here:
        base = baseline(args.baseline_commit, edges=args.edges)
        record["baseline"] = base
        keys = (
            *("follow_hops", "follow_modules", "follow_revisits"),
            *("walk_hops", "walk_modules", "walk_revisits", "hops", "modules", "revisits"),
        )
        record["change"] = {k: here[k] - base[k] for k in keys}
        # Reading the flow must take fewer hops, and fewer returns to a module already read,
        # than the baseline did.
        record["targets"] = {
            k: {"at_most": base[k] - 1, "met": here[k] < base[k]}
            for k in ("follow_hops", "follow_revisits", "walk_hops", "walk_revisits")
        }
        record["all_met"] = all(t["met"] for t in record["targets"].values())
    print(json.dumps(record), flush=True)


if __name__ == "__main__":
    main()
