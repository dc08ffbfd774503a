"""The break-glass identity attacks, each vote a real `gpubot` process beside a serving app:
one operator cannot pass the two-person rule alone through the environment, a config of
their own, a second key or a replayed or forged signature."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_cli_breakglass import NODE, RUNBOOK, fingerprint_of, make_key

from gpubot.backends.recording_chat import RecordingNotifier
from gpubot.config import load_settings
from gpubot.domain.control.approvals import ApprovalStatus
from gpubot.domain.runbooks.runs import StepStatus
from gpubot.wiring import App, build_app

GROUPS = {"oncall": {"users": ["U2", "U3"]}}


@pytest.fixture(autouse=True)
def _no_env_config(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("GPUBOT_", "SLACK_")):
            monkeypatch.delenv(name)


@dataclass
class Site:
    """The serving app (its own config, real clock) and the operators' keys."""

    app: App
    dir: Path
    config: Path  # the config `serve` runs with
    keys: dict[str, Path]
    run_id: str
    approval_id: str

    async def gpubot(
        self, *args: str | Path, env: dict[str, str] | None = None
    ) -> tuple[int, str, str]:
        """`gpubot ARGS` as its own OS process, while the serving app follows the audit
        trail every 50 ms as `serve` does every second."""
        beside = Path(sys.executable).with_name("gpubot")
        command = [str(beside)] if beside.is_file() else [sys.executable, "-m", "gpubot.cli"]
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GPUBOT_", "SLACK_"))}
        proc = await asyncio.create_subprocess_exec(
            *command,
            *map(str, args),
            cwd=self.dir,
            env={**base, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        done = asyncio.ensure_future(proc.communicate())
        while not done.done():
            await self.app.service.background.follow()
            await asyncio.sleep(0.05)
        out, err = done.result()
        await self.app.service.wait_idle()
        assert proc.returncode is not None
        return proc.returncode, out.decode(), err.decode()

    async def approval(self) -> Any:
        return await self.app.store.get_approval(self.approval_id)

    async def release(self) -> StepStatus:
        return {s.step_id: s.status for s in await self.app.store.steps(self.run_id)}["release"]

    async def events(self, kind: str) -> list[Any]:
        return [e for e in await self.app.store.events() if e.kind == kind]


def _config(path: Path, base: dict[str, Any], keys: list[tuple[Path, str]]) -> Path:
    listed = [{"key": Path(f"{k}.pub").read_text().strip(), "user": u} for k, u in keys]
    path.write_text(yaml.safe_dump({**base, "policy": {"groups": GROUPS, "operator_keys": listed}}))
    return path


@contextlib.asynccontextmanager
async def site(tmp_path: Path) -> AsyncIterator[Site]:
    rb = tmp_path / "runbooks"
    rb.mkdir()
    (rb / "breakglass.yaml").write_text(RUNBOOK % "two-person")
    base = {
        "store": {"url": f"sqlite:///{tmp_path / 'shared.db'}"},
        "slack": {"mode": "off"},
        "runbooks": {"dirs": [str(rb)]},
    }
    keys = {name: make_key(tmp_path, name) for name in ("u2", "u2b", "u3", "own")}
    # The server's config: u2 and u2b are two keys of one person (laptop and token).
    config = _config(
        tmp_path / "server.yaml",
        base,
        [(keys["u2"], "U2"), (keys["u2b"], "U2"), (keys["u3"], "U3")],
    )
    app = build_app(load_settings(config), notifier=RecordingNotifier())  # real clock
    try:
        _plan, run = await app.service.start_command_run(
            runbook="breakglass", args={"node": NODE}, requested_by="U9", cluster="sim"
        )
        assert run is not None
        await app.service.wait_idle()
        await app.service.background.follow()  # the first follow notes where the audit trail is
        await app.service.wait_idle()
        [request] = await app.store.approvals_for(run.id)
        yield Site(app, tmp_path, config, keys, run.id, request.id)
    finally:
        await app.aclose()


def _refused(result: tuple[int, str, str], fragment: str) -> None:
    code, _out, err = result
    assert code == 1, err
    assert err.count("\n") == 1, err
    assert err.startswith("gpubot: refused: ")
    assert fragment in err
    assert "Traceback" not in err


async def test_one_operator_cannot_pass_the_two_person_rule_alone(tmp_path: Path) -> None:
    """U2 votes; then, as the same person: an environment override of the operator list, a
    config of their own claiming to be U3, and a fresh key their own config maps to U3. None
    is a second approver; the step stays unrun until U3's own key votes."""
    async with site(tmp_path) as s:
        code, out, err = await s.gpubot(
            "approve", s.run_id, "--config", s.config, "--key", s.keys["u2"]
        )
        assert code == 0, err
        assert "Approved by U2; one more approver is needed" in out

        # The environment: refused before anything is signed or stored.
        for env in (
            {"GPUBOT_POLICY__OPERATORS__ROOT": "U3"},
            {"GPUBOT_POLICY__OPERATOR_KEYS": "[]"},
            {"GPUBOT_POLICY": '{"operator_keys": []}'},
        ):
            code, _, err = await s.gpubot(
                "approve", s.run_id, "--config", s.config, "--key", s.keys["u2"], env=env
            )
            assert code == 2, err
            assert "read from the config file only" in err
            assert err.count("\n") == 1

        # A config of their own saying their key is U3: the server knows the key as U2.
        own = s.dir / "own.yaml"
        base = yaml.safe_load(s.config.read_text())
        _config(own, {k: v for k, v in base.items() if k != "policy"}, [(s.keys["u2"], "U3")])
        _refused(
            await s.gpubot("approve", s.run_id, "--config", own, "--key", s.keys["u2"]),
            f"the vote claims to be U3, but key {fingerprint_of(s.keys['u2'])} is U2",
        )
        # A new key their own config lists as U3: the server does not know it.
        _config(own, {k: v for k, v in base.items() if k != "policy"}, [(s.keys["own"], "U3")])
        _refused(
            await s.gpubot("approve", s.run_id, "--config", own, "--key", s.keys["own"]),
            f"key {fingerprint_of(s.keys['own'])} is not an operator key on the server",
        )
        # Their second listed key is the same person.
        _refused(
            await s.gpubot("approve", s.run_id, "--config", s.config, "--key", s.keys["u2b"]),
            "You have already voted on this request.",
        )
        request = await s.approval()
        assert (request.status, request.approvers) == (ApprovalStatus.PENDING, ("U2",))
        assert await s.release() is StepStatus.WAITING_APPROVAL

        code, out, err = await s.gpubot(
            "approve", s.approval_id, "--config", s.config, "--key", s.keys["u3"]
        )
        assert code == 0, err
        assert "Approved by U2 and U3" in out
        for _ in range(100):
            if await s.release() is StepStatus.SUCCEEDED:
                break
            await s.app.service.background.follow()
            await asyncio.sleep(0.05)
        assert await s.release() is StepStatus.SUCCEEDED

        votes = await s.events("approval.vote")
        assert [(e.actor, e.result["key"]) for e in votes] == [
            ("U2", fingerprint_of(s.keys["u2"])),
            ("U3", fingerprint_of(s.keys["u3"])),
        ]
        refused = await s.events("vote.refused")
        assert [e.result["key"] for e in refused] == [
            fingerprint_of(s.keys["u2"]),
            fingerprint_of(s.keys["own"]),
        ]


def _sign(key: Path, message: Path, namespace: str = "gpubot-vote") -> Path:
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, str(message)],
        check=True,
        capture_output=True,
    )
    return Path(f"{message}.sig")


async def test_a_replayed_or_forged_signed_vote_is_refused(tmp_path: Path) -> None:
    """A vote signed elsewhere (--write-message, ssh-keygen -Y sign, --signature) counts
    once; the same signed vote again is refused, and so is one whose message was altered
    after signing, one signed for another namespace and one that is not a signature."""
    async with site(tmp_path) as s:
        vote = s.dir / "vote.json"
        code, out, err = await s.gpubot(
            "approve", s.approval_id, "--config", s.config, "--key", f"{s.keys['u2']}.pub",
            "--write-message", vote,
        )  # fmt: skip
        assert code == 0, err
        assert "ssh-keygen -Y sign" in out
        assert await s.events("vote.submitted") == []  # nothing stored yet
        signature = _sign(s.keys["u2"], vote)

        # Altered after signing: the user it claims.
        forged = s.dir / "forged.json"
        forged.write_bytes(vote.read_bytes().replace(b'"user":"U2"', b'"user":"U3"'))
        _refused(
            await s.gpubot(
                "approve",
                s.approval_id,
                "--config",
                s.config,
                "--message",
                forged,
                "--signature",
                signature,
            ),
            "does not match this vote (altered or forged)",
        )
        # Signed by the right key for something else (a git commit's namespace).
        other = s.dir / "other.json"
        other.write_bytes(vote.read_bytes())
        _refused(
            await s.gpubot(
                "approve",
                s.approval_id,
                "--config",
                s.config,
                "--message",
                other,
                "--signature",
                _sign(s.keys["u2"], other, "git"),
            ),
            "not 'gpubot-vote'",
        )
        junk = s.dir / "junk.sig"
        junk.write_text("-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n")
        _refused(
            await s.gpubot(
                "approve",
                s.approval_id,
                "--config",
                s.config,
                "--message",
                vote,
                "--signature",
                junk,
            ),
            "malformed",
        )
        assert (await s.approval()).votes == ()

        submit = ("approve", s.approval_id, "--config", s.config, "--message", vote)
        code, out, err = await s.gpubot(*submit, "--signature", signature)
        assert code == 0, err
        assert "Approved by U2; one more approver is needed" in out
        _refused(await s.gpubot(*submit, "--signature", signature), "was submitted before")
        # The same vote signed anew by U2's other key: a valid signature, a used nonce.
        again = s.dir / "again.json"
        again.write_bytes(vote.read_bytes())
        resigned = (*submit[:-1], again, "--signature", _sign(s.keys["u2b"], again))
        _refused(await s.gpubot(*resigned), "was used before")
        assert (await s.approval()).approvers == ("U2",)
        [counted] = await s.events("approval.vote")
        assert counted.result["key"] == fingerprint_of(s.keys["u2"])


async def test_a_config_without_operator_keys_takes_no_vote(tmp_path: Path) -> None:
    """A config that lists no operator keys (the old policy.operators kind) takes no vote
    from the CLI: refused with one line (exit 1), nothing stored."""
    async with site(tmp_path) as s:
        bare = s.dir / "bare.yaml"
        base = yaml.safe_load(s.config.read_text())
        bare.write_text(yaml.safe_dump({k: v for k, v in base.items() if k != "policy"}))
        _refused(
            await s.gpubot("approve", s.run_id, "--config", bare, "--key", s.keys["u2"]),
            "unsigned votes are not taken",
        )
        assert await s.events("vote.submitted") == []
