"""SshSigners against signatures made by the real `ssh-keygen -Y sign`: every key type gpubot
takes verifies, and nothing else does (altered message, other key, other namespace, junk)."""

from __future__ import annotations

import base64
import subprocess
from pathlib import Path

import pytest

from gpubot.backends.sshsig import OperatorKey, SshSigners, parse_sshsig, public_key_fingerprint
from gpubot.errors import SignatureError

MESSAGE = b'{"action":"approve"}'


def _key(directory: Path, name: str, *kind: str) -> Path:
    path = directory / name
    subprocess.run(
        ["ssh-keygen", "-q", *kind, "-N", "", "-C", name, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return path


def _sign(key: Path, message: bytes, namespace: str = "gpubot-vote") -> str:
    return subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace],
        input=message,
        check=True,
        capture_output=True,
    ).stdout.decode()


def _fingerprint(key: Path) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", f"{key}.pub"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return out.split()[1]


def _listed(key: Path, user: str) -> OperatorKey:
    return OperatorKey(public_key=Path(f"{key}.pub").read_text(), user=user, usergroups=("S1",))


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("sshsig")
    return {
        "ed25519": _key(d, "ed25519", "-t", "ed25519"),
        "ecdsa256": _key(d, "ecdsa256", "-t", "ecdsa", "-b", "256"),
        "ecdsa384": _key(d, "ecdsa384", "-t", "ecdsa", "-b", "384"),
        "ecdsa521": _key(d, "ecdsa521", "-t", "ecdsa", "-b", "521"),
        "rsa": _key(d, "rsa", "-t", "rsa", "-b", "2048"),
        "other": _key(d, "other", "-t", "ed25519"),
    }


@pytest.mark.parametrize("kind", ["ed25519", "ecdsa256", "ecdsa384", "ecdsa521", "rsa"])
def test_a_configured_key_verifies_and_names_its_signer(kind: str, keys: dict[str, Path]) -> None:
    signers = SshSigners([_listed(keys[kind], "U1"), _listed(keys["other"], "U2")])
    signer = signers.verify(message=MESSAGE, signature=_sign(keys[kind], MESSAGE))
    assert (signer.user, signer.usergroups) == ("U1", ("S1",))
    assert (
        signer.key
        == _fingerprint(keys[kind])
        == public_key_fingerprint(Path(f"{keys[kind]}.pub").read_text())
    )
    with pytest.raises(SignatureError, match="altered or forged") as caught:
        signers.verify(message=MESSAGE + b" ", signature=_sign(keys[kind], MESSAGE))
    assert caught.value.key == signer.key


def test_an_unlisted_key_another_namespace_and_junk_are_refused(keys: dict[str, Path]) -> None:
    signers = SshSigners([_listed(keys["ed25519"], "U1")])
    with pytest.raises(SignatureError, match="not an operator key on the server") as caught:
        signers.verify(message=MESSAGE, signature=_sign(keys["other"], MESSAGE))
    assert caught.value.key == _fingerprint(keys["other"])
    with pytest.raises(SignatureError, match="namespace 'git'"):
        signers.verify(message=MESSAGE, signature=_sign(keys["ed25519"], MESSAGE, "git"))
    good = _sign(keys["ed25519"], MESSAGE)
    for junk in ("", "hello", good.replace("SIGNATURE", "MESSAGE"), good[:-40], "x" * 9000):
        with pytest.raises(SignatureError):
            signers.verify(message=MESSAGE, signature=junk)
    with pytest.raises(SignatureError, match="no operator keys are configured"):
        SshSigners([]).verify(message=MESSAGE, signature=good)


def test_a_signature_with_trailing_bytes_is_malformed(keys: dict[str, Path]) -> None:
    lines = _sign(keys["ed25519"], MESSAGE).strip().splitlines()
    raw = base64.b64decode("".join(lines[1:-1])) + b"\0"
    armored = "\n".join([lines[0], base64.b64encode(raw).decode(), lines[-1]])
    with pytest.raises(SignatureError, match="malformed"):
        parse_sshsig(armored)


def test_keys_gpubot_does_not_take_are_refused_when_configured(tmp_path: Path) -> None:
    small = _key(tmp_path, "small", "-t", "rsa", "-b", "1024")
    with pytest.raises(ValueError, match="2048 or more"):
        SshSigners([_listed(small, "U1")])
    for line in ("ssh-dss AAAAB3NzaC1kc3M=", "ssh-ed25519 !!!", "ssh-ed25519", ""):
        with pytest.raises(ValueError, match=r"key|base64"):
            SshSigners([OperatorKey(public_key=line, user="U1")])
