"""A real Kubernetes control plane on loopback: etcd, kube-apiserver and the disruption controller.

The binaries come from `../shared/k8s` (override with GPUBOT_K8S_DIR): they are decompressed
once into `.cache/k8s/` and checked against the sha256 their README lists. etcd is Debian's
`etcd-server`. Everything listens on free 127.0.0.1 ports, lives in one temporary folder, and
is stopped by PID in the order the README gives: controller-manager, apiserver (killed if it
has not stopped after 20 s), etcd. Where a part is missing the tests are skipped with what to
install, and with CI=true they fail instead.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import lzma
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, NoReturn

import pytest
import yaml

REPO = Path(__file__).resolve().parents[3]
K8S_DIR = Path(os.environ.get("GPUBOT_K8S_DIR", REPO.parent / "shared" / "k8s"))
CACHE = REPO / ".cache" / "k8s"
# sha256 of the decompressed binaries, as ../shared/k8s/README.md lists them.
BINARIES = {
    "kube-apiserver": "2e0e89bb848b6c657a63ce9fa30d0bbb501614c13eeaf30ae9a26396d9a45e13",
    "kube-controller-manager": "c85d4568431f0c97a814bfe4a85679cce11674b97ee1e4415dc63e52250c7820",
}
INSTALL = (
    "the real control plane needs Debian's etcd-server (apt-get install etcd-server) and "
    f"kube-apiserver.xz and kube-controller-manager.xz in {K8S_DIR} (set GPUBOT_K8S_DIR)"
)


def missing(reason: str) -> NoReturn:
    """A real part is not there: skip on a laptop, fail in CI (CI=true)."""
    if os.environ.get("CI") == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def binary(name: str) -> Path:
    """The decompressed binary, checked once: a stamp beside it records the verified hash."""
    target, stamp = CACHE / name, CACHE / f"{name}.sha256"
    want = BINARIES[name]
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == want:
        return target
    source = K8S_DIR / f"{name}.xz"
    if not source.is_file():
        missing(f"{source} not found: {INSTALL}")
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = CACHE / f"{name}.{os.getpid()}.partial"  # another session may be at it too
    with lzma.open(source) as src, partial.open("wb") as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    got = _sha256(partial)
    if got != want:
        partial.unlink()
        pytest.fail(f"{source} decompresses to sha256 {got}, not the {want} its README lists")
    partial.chmod(0o755)
    partial.replace(target)
    stamp.write_text(want + "\n")
    return target


def etcd_binary() -> Path:
    found = shutil.which("etcd")
    if found is None:
        missing(f"etcd not installed: {INSTALL}")
    return Path(found)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """Runs in the child before exec: if pytest dies, the kernel kills the server too."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path
    out: IO[bytes]

    def tail(self, lines: int = 15) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self, *, grace: float) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=10)
        self.out.close()


@dataclass
class ControlPlane:
    """A running control plane: its URL, CA, admin token and kubeconfig."""

    url: str
    ca: Path
    token: str
    kubeconfig: Path
    rbac: bool
    procs: list[Proc] = field(default_factory=list)

    def kubeconfig_for(self, path: Path, *, token: str, context: str = "lab") -> Path:
        """A kubeconfig whose context `context` reaches this server with `token`."""
        path.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "v1",
                    "kind": "Config",
                    "current-context": context,
                    "clusters": [
                        {
                            "name": "lab",
                            "cluster": {"server": self.url, "certificate-authority": str(self.ca)},
                        }
                    ],
                    "users": [{"name": "user", "user": {"token": token}}],
                    "contexts": [{"name": context, "context": {"cluster": "lab", "user": "user"}}],
                }
            )
        )
        return path

    def stop(self) -> None:
        """By PID, in the README's order: an apiserver whose etcd went first can hang."""
        graces = {"kube-controller-manager": 10.0, "kube-apiserver": 20.0, "etcd": 10.0}
        for proc in reversed(self.procs):
            proc.stop(grace=graces[proc.name])
        self.procs.clear()


def _spawn(name: str, argv: list[str], workdir: Path) -> Proc:
    log = workdir / f"{name}.log"
    out = log.open("wb")
    popen = subprocess.Popen(
        argv,
        cwd=workdir,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
    )
    return Proc(name, popen, log, out)


class Exited(RuntimeError):
    """A server exited while starting: most often a port taken since free_port() chose it."""


def _wait(proc: Proc, ready: Callable[[], bool], what: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.popen.poll() is not None:
            raise Exited(f"{proc.name} exited ({proc.popen.returncode}):\n{proc.tail()}")
        with contextlib.suppress(OSError):
            if ready():
                return
        time.sleep(0.05)
    raise RuntimeError(f"{proc.name}: {what} not ready after {limit:g}s:\n{proc.tail()}")


def _get(url: str, *, token: str | None = None, context: ssl.SSLContext | None = None) -> bool:
    request = urllib.request.Request(url)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=2, context=context) as response:
        return bool(response.status == 200)


def start(workdir: Path, *, rbac: bool) -> ControlPlane:
    """etcd, then the apiserver (ready at /readyz), then the disruption controller; on fresh
    ports in a fresh folder once more if a server exits while starting (other sessions on
    this machine pick free ports too)."""
    for attempt in range(3):
        try:
            return _start(workdir / f"plane{attempt}", rbac=rbac)
        except Exited:
            if attempt == 2:
                raise
    raise AssertionError("unreachable")


def _start(workdir: Path, *, rbac: bool) -> ControlPlane:
    etcd = etcd_binary()
    apiserver, kcm = binary("kube-apiserver"), binary("kube-controller-manager")
    workdir.mkdir(parents=True, exist_ok=True)
    if shutil.which("openssl") is None:
        missing("openssl not installed: it makes the service-account key pair")
    subprocess.run(
        ["openssl", "genrsa", "-out", "sa.key", "2048"],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    subprocess.run(
        ["openssl", "rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    token = secrets.token_hex(16)
    (workdir / "tokens.csv").write_text(f"{token},admin,admin,system:masters\n")
    client_port, peer_port, api_port, kcm_port = (free_port() for _ in range(4))
    client_url, peer_url = f"http://127.0.0.1:{client_port}", f"http://127.0.0.1:{peer_port}"
    plane = ControlPlane(
        url=f"https://127.0.0.1:{api_port}",
        ca=workdir / "certs" / "apiserver.crt",
        token=token,
        kubeconfig=workdir / "kubeconfig",
        rbac=rbac,
    )
    try:
        etcd_proc = _spawn(
            "etcd",
            [
                str(etcd),
                f"--data-dir={workdir / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--log-level=warn",
            ],
            workdir,
        )
        plane.procs.append(etcd_proc)
        _wait(etcd_proc, lambda: _get(f"{client_url}/health"), "/health")
        api_proc = _spawn(
            "kube-apiserver",
            [
                str(apiserver),
                f"--etcd-servers={client_url}",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-account-key-file=sa.pub",
                "--service-account-signing-key-file=sa.key",
                "--service-cluster-ip-range=10.96.0.0/12",
                f"--authorization-mode={'RBAC' if rbac else 'AlwaysAllow'}",
                "--token-auth-file=tokens.csv",
                "--bind-address=127.0.0.1",
                f"--secure-port={api_port}",
                "--cert-dir=certs",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
            ],
            workdir,
        )
        plane.procs.append(api_proc)
        insecure = ssl.create_default_context()
        insecure.check_hostname, insecure.verify_mode = False, ssl.CERT_NONE
        _wait(
            api_proc,
            lambda: _get(f"{plane.url}/readyz", token=token, context=insecure),
            "/readyz",
        )
        plane.kubeconfig_for(plane.kubeconfig, token=token)
        kcm_proc = _spawn(
            "kube-controller-manager",
            [
                str(kcm),
                f"--kubeconfig={plane.kubeconfig}",
                "--controllers=disruption",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                "--cert-dir=certs-kcm",
            ],
            workdir,
        )
        plane.procs.append(kcm_proc)
        _wait(
            kcm_proc,
            lambda: _get(f"https://127.0.0.1:{kcm_port}/healthz", context=insecure),
            "/healthz",
        )
    except BaseException:
        plane.stop()
        raise
    return plane
