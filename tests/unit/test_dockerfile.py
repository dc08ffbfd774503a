"""The Dockerfile's structure, read with Docker's own parser (no container engine runs here):
two stages, a non-root final stage without compilers, the `gpubot` entry point for the bot and
the agent, and a build context that holds everything the package build needs."""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

import dockerfile
import pytest

from gpubot.cli import parser

REPO = Path(__file__).resolve().parents[2]
COMPILERS = ("gcc", "g++", "clang", "build-essential", "make", "cc", "rustc", "cargo")


def _stages() -> list[list[dockerfile.Command]]:
    stages: list[list[dockerfile.Command]] = []
    for cmd in dockerfile.parse_file(str(REPO / "Dockerfile")):
        if cmd.cmd == "FROM":
            stages.append([])
        assert stages, f"line {cmd.start_line}: {cmd.cmd} before the first FROM"
        stages[-1].append(cmd)
    return stages


def _only(stage: list[dockerfile.Command], name: str) -> list[dockerfile.Command]:
    return [c for c in stage if c.cmd == name]


def test_two_stages_on_slim_python() -> None:
    """A builder stage and a final stage, both on python:3.11-slim."""
    builder, final = _stages()
    assert builder[0].value == ("python:3.11-slim", "AS", "builder")
    assert final[0].value == ("python:3.11-slim",)


def test_final_stage_runs_as_a_non_root_user() -> None:
    """The last USER of the final stage is uid 10001 (the chart's runAsUser), never root."""
    _, final = _stages()
    users = _only(final, "USER")
    assert users, "the final stage never leaves root"
    user = users[-1].value[0]
    assert user.split(":")[0] == "10001"
    (run_user,) = [c for c in _only(final, "RUN") if "useradd" in c.value[0]]
    assert "--uid 10001" in run_user.value[0]


def test_final_stage_has_no_compilers_and_builds_nothing() -> None:
    """No compiler packages, no package builds: the final stage only copies the built venv."""
    _, final = _stages()
    for run in _only(final, "RUN"):
        words = run.value[0].replace("\\", " ").split()
        assert not set(words) & set(COMPILERS), run.original
        assert "pip" not in words, run.original
        assert "apt-get" not in words, run.original
    copies = _only(final, "COPY")
    assert copies
    assert all(c.flags == ("--from=builder",) for c in copies)


def test_entry_point_serves_the_bot_and_runs_the_agent() -> None:
    """ENTRYPOINT ["gpubot"], CMD serve; `gpubot agent …` (the DaemonSet's args) parses too."""
    _, final = _stages()
    (entry,) = _only(final, "ENTRYPOINT")
    assert entry.json
    assert entry.value == ("gpubot",)
    (cmd,) = _only(final, "CMD")
    assert cmd.json
    assert cmd.value[0] == "serve"
    served = parser().parse_args(list(cmd.value))
    assert (served.command, served.host) == ("serve", "0.0.0.0")
    agent = parser().parse_args(
        ["agent", "--driver", "nvml", "--listen", "0.0.0.0:9400", "--node", "gpu-node-01"]
    )
    assert (agent.command, agent.driver, agent.node) == ("agent", "nvml", "gpu-node-01")
    exposed = {p for c in _only(final, "EXPOSE") for p in c.value}
    assert {"8080", "9400"} <= exposed


def _ignored(path: str) -> bool:
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return any(fnmatch.fnmatch(path, p.removeprefix("**/")) for p in patterns)


def _copied_sources() -> list[str]:
    builder, _ = _stages()
    sources: list[str] = []
    for copy in _only(builder, "COPY"):
        assert not copy.flags, "the builder copies from the build context only"
        sources += list(copy.value[:-1])
    return sources


def test_build_context_keeps_what_the_builder_copies() -> None:
    """Every COPY source exists and survives .dockerignore; junk and secrets stay out."""
    for source in _copied_sources():
        assert (REPO / source).exists(), source
        assert not _ignored(source), f"{source} is copied but .dockerignore drops it"
    for junk in (".venv", ".git", "tests", "gpubot.db", ".env", "__pycache__"):
        assert _ignored(junk), junk


def test_builder_copies_everything_the_package_build_reads() -> None:
    """pyproject's readme and every package directory (runbooks/ ships as a package) are in
    the copied sources, so `pip wheel .` in the builder builds the same package as here."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())
    setuptools = project["tool"]["setuptools"]
    sources = _copied_sources()
    needed = [project["project"]["readme"], "pyproject.toml"]
    for package in setuptools["packages"]:
        needed.append(setuptools.get("package-dir", {}).get(package, package.replace(".", "/")))
    for path in needed:
        assert (REPO / path).exists(), path
        assert any(path == s or path.startswith(f"{s}/") for s in sources), f"{path} not copied"


@pytest.mark.parametrize("needle", ["docker build -t", "gpubot agent"])
def test_install_page_documents_the_image(needle: str) -> None:
    assert needle in (REPO / "docs" / "install" / "kubernetes.md").read_text()
