"""SSH signatures (OpenSSH's SSHSIG, as `ssh-keygen -Y sign` writes them) checked with
`cryptography` against the operator keys in the server's own config."""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.hazmat.primitives.serialization import load_ssh_public_key

from gpubot.domain.control.signed_votes import (
    MAX_SIGNATURE_BYTES,
    NAMESPACE,
    Signer,
    fingerprint,
    key_blob,
)
from gpubot.errors import SignatureError

_BEGIN = "-----BEGIN SSH SIGNATURE-----"
_END = "-----END SSH SIGNATURE-----"
_MAGIC = b"SSHSIG"
_MESSAGE_HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
_EC_HASHES: dict[str, hashes.HashAlgorithm] = {
    "ecdsa-sha2-nistp256": hashes.SHA256(),
    "ecdsa-sha2-nistp384": hashes.SHA384(),
    "ecdsa-sha2-nistp521": hashes.SHA512(),
}
# ssh-rsa signatures (SHA-1) are refused, as OpenSSH itself refuses them by default.
_RSA_HASHES: dict[str, hashes.HashAlgorithm] = {
    "rsa-sha2-256": hashes.SHA256(),
    "rsa-sha2-512": hashes.SHA512(),
}
_PublicKey = ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey


@dataclass(frozen=True)
class OperatorKey:
    """One configured key: the OpenSSH public key line and who it stands for."""

    public_key: str
    user: str
    usergroups: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Known:
    kind: str
    blob: bytes
    key: _PublicKey
    signer: Signer


@dataclass(frozen=True)
class _Sshsig:
    public_key: bytes
    namespace: bytes
    hash_algorithm: bytes
    signature: bytes


class SshSigners:
    """VoteSigners: which configured key made an SSHSIG signature over a message, if any."""

    def __init__(self, keys: Iterable[OperatorKey]) -> None:
        self._keys: dict[str, _Known] = {}
        for entry in keys:
            kind, blob = key_blob(entry.public_key)
            key = _load(kind, blob)
            signer = Signer(key=fingerprint(blob), user=entry.user, usergroups=entry.usergroups)
            self._keys[signer.key] = _Known(kind=kind, blob=blob, key=key, signer=signer)

    def configured(self) -> bool:
        return bool(self._keys)

    def verify(self, *, message: bytes, signature: str) -> Signer:
        """The signer of `message`; SignatureError (one line, a refusal) for anything else."""
        if not self._keys:
            raise SignatureError(
                "no operator keys are configured on the server (policy.operator_keys)"
            )
        sig = parse_sshsig(signature)
        key = fingerprint(sig.public_key)
        known = self._keys.get(key)
        if known is None or known.blob != sig.public_key:
            raise SignatureError(f"key {key} is not an operator key on the server", key=key)
        if sig.namespace != NAMESPACE.encode():
            raise SignatureError(
                f"the signature is for namespace {_text(sig.namespace)!r}, not {NAMESPACE!r} "
                f"(sign with ssh-keygen -Y sign -n {NAMESPACE})",
                key=key,
            )
        digest = _MESSAGE_HASHES.get(sig.hash_algorithm.decode("ascii", "replace"))
        if digest is None:
            raise SignatureError("the signature's message hash is not sha256 or sha512", key=key)
        signed = (
            _MAGIC
            + _string(sig.namespace)
            + _string(b"")
            + _string(sig.hash_algorithm)
            + _string(digest(message).digest())
        )
        if not _valid(known, sig.signature, signed):
            raise SignatureError(
                f"the signature by {key} does not match this vote (altered or forged)", key=key
            )
        return known.signer


def public_key_fingerprint(line: str) -> str:
    """`SHA256:…` of an OpenSSH public key line; ValueError with one line if it is none."""
    kind, blob = key_blob(line)
    _load(kind, blob)
    return fingerprint(blob)


def parse_sshsig(armored: str) -> _Sshsig:
    """The fields of an armored SSHSIG (PROTOCOL.sshsig); SignatureError when malformed."""
    if len(armored) > MAX_SIGNATURE_BYTES:
        raise SignatureError(f"the signature is over {MAX_SIGNATURE_BYTES} bytes")
    lines = [line.strip() for line in armored.strip().splitlines()]
    if len(lines) < 3 or lines[0] != _BEGIN or lines[-1] != _END:
        raise SignatureError("the signature is not an SSH signature (ssh-keygen -Y sign)")
    try:
        raw = base64.b64decode("".join(lines[1:-1]), validate=True)
        reader = _Reader(raw)
        if reader.take(6) != _MAGIC or reader.uint32() != 1:
            raise ValueError("not SSHSIG version 1")
        public_key = reader.string()
        namespace = reader.string()
        reader.string()  # reserved
        hash_algorithm = reader.string()
        signature = reader.string()
        reader.end()
    except (binascii.Error, ValueError):
        raise SignatureError("the SSH signature is malformed") from None
    return _Sshsig(public_key, namespace, hash_algorithm, signature)


def _valid(known: _Known, blob: bytes, signed: bytes) -> bool:
    try:
        reader = _Reader(blob)
        algorithm = reader.string().decode("ascii", "replace")
        raw = reader.string()
        reader.end()
        key = known.key
        if isinstance(key, ed25519.Ed25519PublicKey):
            if algorithm != "ssh-ed25519":
                return False
            key.verify(raw, signed)
        elif isinstance(key, ec.EllipticCurvePublicKey):
            if algorithm != known.kind:
                return False
            parts = _Reader(raw)
            r, s = parts.mpint(), parts.mpint()
            parts.end()
            key.verify(encode_dss_signature(r, s), signed, ec.ECDSA(_EC_HASHES[known.kind]))
        else:
            if algorithm not in _RSA_HASHES:
                return False
            key.verify(raw, signed, padding.PKCS1v15(), _RSA_HASHES[algorithm])
    except (InvalidSignature, ValueError):
        return False
    return True


def _load(kind: str, blob: bytes) -> _PublicKey:
    line = f"{kind} {base64.b64encode(blob).decode()}".encode()
    try:
        key = load_ssh_public_key(line)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise ValueError(f"the {kind} key cannot be read: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PublicKey | ec.EllipticCurvePublicKey | rsa.RSAPublicKey):
        raise ValueError(f"key type {kind} is not one gpubot checks")
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < 2048:
        raise ValueError(f"the RSA key has {key.key_size} bits; gpubot takes 2048 or more")
    return key


def _string(value: bytes) -> bytes:
    return len(value).to_bytes(4, "big") + value


def _text(value: bytes) -> str:
    return value.decode("ascii", "replace")[:40]


class _Reader:
    """SSH wire format: uint32 lengths before strings; ValueError past the end."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def take(self, size: int) -> bytes:
        if size < 0 or self._at + size > len(self._data):
            raise ValueError("truncated")
        part = self._data[self._at : self._at + size]
        self._at += size
        return part

    def uint32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def string(self) -> bytes:
        return self.take(self.uint32())

    def mpint(self) -> int:
        return int.from_bytes(self.string(), "big", signed=True)

    def end(self) -> None:
        if self._at != len(self._data):
            raise ValueError("trailing data")
