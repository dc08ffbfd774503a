"""Alertmanager-style label matchers: `name="v"`, `name!="v"`, `name=~"re"`, `name!~"re"`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Op = Literal["=", "!=", "=~", "!~"]

_MATCHER = re.compile(
    r"""^\s*(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(?P<op>=~|!~|!=|=)\s*(?P<value>"(?:[^"\\]|\\.)*"|[^"\s]*)\s*$"""
)


@dataclass(frozen=True)
class Matcher:
    name: str
    op: Op
    value: str
    pattern: re.Pattern[str] | None = None

    def matches(self, labels: Mapping[str, str]) -> bool:
        # A missing label reads as the empty string, as in Alertmanager.
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        assert self.pattern is not None
        hit = self.pattern.fullmatch(actual) is not None
        return hit if self.op == "=~" else not hit

    def __str__(self) -> str:
        return f'{self.name}{self.op}"{self.value}"'


def parse_matcher(text: str) -> Matcher:
    """Parse one matcher; raise ValueError with a one-line reason if it is malformed."""
    found = _MATCHER.match(text)
    if not found:
        raise ValueError(f'not a label matcher: {text!r} (expected e.g. xid="79" or gpu=~"[0-3]")')
    name, op, value = found["name"], found["op"], found["value"]
    if value.startswith('"'):
        value = _unquote(value[1:-1])
    pattern = None
    if op in ("=~", "!~"):
        try:
            # Alertmanager anchors regular expressions at both ends, and its RE2 classes
            # (\d, \w, \s) are ASCII: a label of Arabic-Indic digits is not "79".
            pattern = re.compile(f"(?:{value})", re.ASCII)
        except re.error as exc:
            raise ValueError(f"bad regular expression in {text!r}: {exc}") from exc
    return Matcher(name=name, op=op, value=value, pattern=pattern)  # type: ignore[arg-type]


def _unquote(text: str) -> str:
    """Undo only the escapes a quoted matcher value uses; keep regex escapes such as \\d."""

    def one(found: re.Match[str]) -> str:
        char = found[1]
        return {"\\": "\\", '"': '"', "n": "\n"}.get(char, "\\" + char)

    return re.sub(r"\\(.)", one, text)


def all_match(matchers: tuple[Matcher, ...], labels: Mapping[str, str]) -> bool:
    return all(m.matches(labels) for m in matchers)
