"""Signing a break-glass vote with the operator's own SSH key, by OpenSSH's `ssh-keygen -Y sign`."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from pathlib import Path

from gpubot.domain.control.signed_votes import NAMESPACE
from gpubot.errors import ApprovalError, InputError

# The keys ssh-keygen makes by default, newest kind first.
_DEFAULT_KEYS = ("id_ed25519", "id_ecdsa", "id_rsa")
_SIGN_TIMEOUT = 120.0  # a passphrase typed, or a hardware key touched


def find_key(given: Path | None) -> Path:
    """The key to sign with: --key, else the account's first default key in ~/.ssh; a vote
    without one is refused (ApprovalError), as votes are counted only when signed."""
    if given is not None:
        if not given.is_file():
            raise InputError(f"--key {given}: no such file")
        return given
    home = Path(pwd.getpwuid(os.getuid()).pw_dir)
    for name in _DEFAULT_KEYS:
        if (home / ".ssh" / name).is_file():
            return home / ".ssh" / name
    raise ApprovalError(
        "unsigned vote: break-glass decisions are signed with your SSH key; no "
        f"~/.ssh/{'|'.join(_DEFAULT_KEYS)} found (give --key FILE, or --message and --signature)"
    )


def public_line(key: Path) -> str:
    """The key's OpenSSH public line: KEY.pub, KEY itself when it is the .pub (the private
    half in an agent or a token), else derived from the private key by ssh-keygen -y."""
    candidates = [key] if key.suffix == ".pub" else [key.with_name(key.name + ".pub")]
    for path in candidates:
        if path.is_file():
            try:
                return path.read_text(encoding="ascii").strip()
            except (OSError, UnicodeDecodeError) as exc:
                raise InputError(f"{path}: cannot read the public key: {exc}") from None
    return _ssh_keygen(["-y", "-f", str(key)], data=None).strip()


def sign(key: Path, message: bytes) -> str:
    """`ssh-keygen -Y sign -f KEY -n gpubot-vote` over `message`: the armored signature."""
    return _ssh_keygen(["-Y", "sign", "-f", str(key), "-n", NAMESPACE], data=message)


def _ssh_keygen(args: list[str], *, data: bytes | None) -> str:
    program = shutil.which("ssh-keygen")
    if program is None:
        raise InputError("ssh-keygen (OpenSSH) is not on PATH: it signs break-glass votes")
    try:
        # The arguments are a path the operator gave and fixed flags; no shell.
        done = subprocess.run(  # noqa: S603
            [program, *args],
            input=data if data is not None else b"",
            capture_output=True,
            timeout=_SIGN_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise InputError(f"ssh-keygen {args[0]} took over {_SIGN_TIMEOUT:.0f} s") from None
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise InputError(f"ssh-keygen {' '.join(args[:2])}: {why[-1] if why else 'failed'}")
    return done.stdout.decode("ascii", "replace")
