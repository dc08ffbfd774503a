"""A backend wrapped to count its failed calls: its counted methods are made once, not at
every call, and follow the backend when one of its methods is replaced."""

from __future__ import annotations

from typing import Any

import pytest

from gpubot.engine.counted_ports import counted


class Backend:
    def __init__(self) -> None:
        self.calls: list[str] = []

    async def get(self, key: str) -> str:
        self.calls.append(key)
        if key == "bad":
            raise ConnectionError("refused")
        return key.upper()


class Errors:
    def __init__(self) -> None:
        self.seen: list[str] = []

    def dependency_error(self, *, dependency: str) -> None:
        self.seen.append(dependency)


async def test_a_counted_method_is_made_once_and_still_counts() -> None:
    errors = Errors()
    backend = Backend()
    wrapped: Any = counted(backend, "agent", errors)  # type: ignore[arg-type]
    assert wrapped.get is wrapped.get
    assert await wrapped.get("a") == "A"
    with pytest.raises(ConnectionError):
        await wrapped.get("bad")
    assert errors.seen == ["agent"]
    assert backend.calls == ["a", "bad"]


async def test_a_replaced_method_is_the_one_called(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = Errors()
    backend = Backend()
    wrapped: Any = counted(backend, "agent", errors)  # type: ignore[arg-type]
    assert await wrapped.get("a") == "A"

    async def other(key: str) -> str:
        raise TimeoutError(key)

    monkeypatch.setattr(backend, "get", other)
    with pytest.raises(TimeoutError):
        await wrapped.get("b")
    assert errors.seen == ["agent"]
