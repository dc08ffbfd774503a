"""A small PromQL subset, parsed to a tree and evaluated over the simulated cluster's samples.

The simulated cluster keeps no history: every series is steady, so `avg_over_time(x[1h])`
is the current value of `x`, and `count_over_time((x < 5)[24h:5m])` is 24h/5m = 288 for a
series whose current value is below 5 and absent otherwise. Evaluation is one pass over the
series per selector, whatever the fleet size.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import NoReturn

from gpubot.domain.fleet.cluster import Sample
from gpubot.errors import InputError

Row = tuple[dict[str, str], float]
# metric name -> that metric's current samples, labels including `__name__`
Source = Callable[[str], Iterable[Row]]

AGGREGATIONS = ("sum", "avg", "max", "min", "count")
OVER_TIME = ("avg", "max", "min", "last", "sum", "count")
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "==": operator.eq,
    "!=": operator.ne,
}
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_DURATION_PART = re.compile(r"(\d+)(ms|[smhdwy])")
_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<duration>(?:\d+(?:ms|[smhdwy]))+)(?![A-Za-z0-9_.])
    |(?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<ident>[A-Za-z_][A-Za-z0-9_:]*)
    |(?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    |(?P<op>=~|!~|!=|==|<=|>=|[-<>=(){}\[\],:])""",
    re.VERBOSE,
)
_SUBSET = (
    "simulated metrics support only a PromQL subset (DCGM selectors with = != =~ !~ matchers; "
    "sum|avg|max|min|count by|without (…); avg|max|min|last_over_time(sel[d]); "
    "F_over_time((expr)[d:s]); comparisons with a number)"
)


@dataclass(frozen=True)
class Matcher:
    label: str
    op: str  # = != =~ !~
    value: str
    pattern: re.Pattern[str] | None = field(default=None, compare=False)

    def matches(self, labels: dict[str, str]) -> bool:
        # As in PromQL, a missing label has the value "".
        actual = labels.get(self.label, "")
        if self.pattern is None:
            return (actual == self.value) == (self.op == "=")
        found = self.pattern.fullmatch(actual) is not None  # PromQL anchors regexes
        return found == (self.op == "=~")


@dataclass(frozen=True)
class Selector:
    metric: str
    matchers: tuple[Matcher, ...] = ()


@dataclass(frozen=True)
class Range:
    """`sel[d]` or the subquery `(expr)[d:s]`: only an argument of an F_over_time function."""

    expr: Expr
    seconds: float
    step: float | None = None  # None: a range selector, not a subquery


@dataclass(frozen=True)
class OverTime:
    func: str  # avg max min last sum count
    arg: Range


@dataclass(frozen=True)
class Aggregate:
    op: str
    expr: Expr
    labels: tuple[str, ...] = ()
    without: bool = False


@dataclass(frozen=True)
class Compare:
    expr: Expr
    op: str
    number: float


Expr = Selector | OverTime | Aggregate | Compare


def parse(promql: str, *, metrics: Collection[str]) -> Expr:
    """The tree for `promql`; InputError naming the problem when it is outside the subset."""
    return _Parser(promql, metrics).parse()


def evaluate(expr: Expr, source: Source) -> list[Sample]:
    return [Sample(labels=labels, value=value) for labels, value in _eval(expr, source)]


def _eval(expr: Expr, source: Source) -> list[Row]:
    match expr:
        case Selector(metric=metric, matchers=matchers):
            return [row for row in source(metric) if all(m.matches(row[0]) for m in matchers)]
        case Compare(expr=inner, op=op, number=number):
            test = _COMPARE[op]
            return [row for row in _eval(inner, source) if test(row[1], number)]
        case OverTime(func=func, arg=arg):
            return _over_time(func, arg, source)
        case Aggregate():
            return _aggregate(expr, _eval(expr.expr, source))
    raise AssertionError(f"unknown node {expr!r}")


def _over_time(func: str, arg: Range, source: Source) -> list[Row]:
    # Steady state: every point in the window holds the series' current value.
    points = math.floor(arg.seconds / arg.step) if arg.step else 0
    out: list[Row] = []
    for labels, value in _eval(arg.expr, source):
        if func != "last":  # as in Prometheus, functions drop the metric name
            labels = dict(labels)
            labels.pop("__name__", None)
        if func == "count":
            value = float(points)
        elif func == "sum":
            value *= points
        out.append((labels, value))
    return out


def _aggregate(agg: Aggregate, rows: list[Row]) -> list[Row]:
    groups: dict[tuple[str, ...], tuple[dict[str, str], list[float]]] = {}
    dropped = {*agg.labels, "__name__"}
    for labels, value in rows:
        if agg.without:
            kept = {k: v for k, v in labels.items() if k not in dropped}
            key = tuple(f"{k}\0{v}" for k, v in sorted(kept.items()))
        else:
            key = tuple(labels.get(k, "") for k in agg.labels)
        group = groups.get(key)
        if group is None:
            if not agg.without:  # an empty label is no label, as in Prometheus
                kept = {k: v for k, v in zip(agg.labels, key, strict=True) if v}
            group = groups[key] = (kept, [])
        group[1].append(value)
    out: list[Row] = []
    for labels, values in groups.values():
        if agg.op == "sum":
            total = math.fsum(values)
        elif agg.op == "avg":
            total = math.fsum(values) / len(values)
        elif agg.op == "count":
            total = float(len(values))
        else:  # max/min skip NaN, as Prometheus does, unless every value is NaN
            numbers = [v for v in values if not math.isnan(v)] or [math.nan]
            total = max(numbers) if agg.op == "max" else min(numbers)
        out.append((labels, total))
    return out


class _Parser:
    """Recursive descent over the tokens; every refusal is one InputError line."""

    def __init__(self, promql: str, metrics: Collection[str]) -> None:
        self.text = promql
        self.metrics = metrics
        self.kinds: list[str] = []  # each token's kind: duration, number, ident, string, op
        self.tokens = list(self._tokenize())
        self.pos = 0

    def parse(self) -> Expr:
        if not self.tokens:
            self.fail("empty query")
        expr = self.expr()
        if self.pos < len(self.tokens):
            self.fail(f"unexpected {self.peek()!r}")
        return expr

    def expr(self) -> Expr:
        expr = self.unary()
        if isinstance(expr, Range):
            self.fail("a range needs an F_over_time function around it")
        while self.peek() in _COMPARE:
            op = self.take()
            if self.peek() == "bool":
                self.fail("the bool modifier is not supported")
            expr = Compare(expr=expr, op=op, number=self.number())
        return expr

    def unary(self) -> Expr | Range:
        head = self.peek()
        if head == "(":
            self.take()
            inner = self.expr()
            self.expect(")")
            return self.maybe_range(inner)
        if head in AGGREGATIONS and self.peek(1) in ("(", "by", "without"):
            return self.maybe_range(self.aggregate())
        if head.endswith("_over_time") and self.peek(1) == "(":
            return self.maybe_range(self.over_time())
        if self.pos < len(self.kinds) and self.kinds[self.pos] == "ident":
            return self.maybe_range(self.selector())
        self.fail(f"unexpected {head!r}" if head else "unexpected end of query")

    def aggregate(self) -> Aggregate:
        op = self.take()
        labels, without = self.grouping() if self.peek() in ("by", "without") else ((), False)
        self.expect("(")
        if self.peek(1) == ",":
            self.fail(f"{op} takes one argument")
        inner = self.expr()
        self.expect(")")
        if self.peek() in ("by", "without"):
            if labels or without:
                self.fail("a second by/without clause")
            labels, without = self.grouping()
        return Aggregate(op=op, expr=inner, labels=labels, without=without)

    def grouping(self) -> tuple[tuple[str, ...], bool]:
        without = self.take() == "without"
        self.expect("(")
        labels: list[str] = []
        while self.peek() != ")":
            labels.append(self.label_name())
            if self.peek() != ")":
                self.expect(",")
        self.expect(")")
        return tuple(labels), without

    def over_time(self) -> OverTime:
        name = self.take()
        func = name.removesuffix("_over_time")
        if func not in OVER_TIME:
            self.fail(f"unsupported function {name}")
        self.expect("(")
        arg = self.unary()
        self.expect(")")
        if not isinstance(arg, Range):
            self.fail(f"{name} needs a range: sel[d] or (expr)[d:s]")
        if arg.step is None and func in ("sum", "count"):
            self.fail(f"{name} over a range selector needs a subquery (expr)[d:s] here")
        return OverTime(func=func, arg=arg)

    def selector(self) -> Selector:
        metric = self.take()
        if metric not in self.metrics:
            self.fail(f"unknown metric {metric!r} (known: {', '.join(self.metrics)})")
        matchers: list[Matcher] = []
        if self.peek() == "{":
            self.take()
            while self.peek() != "}":
                matchers.append(self.matcher())
                if self.peek() != "}":
                    self.expect(",")
            self.expect("}")
        return Selector(metric=metric, matchers=tuple(matchers))

    def matcher(self) -> Matcher:
        label = self.label_name()
        op = self.take()
        if op not in ("=", "!=", "=~", "!~"):
            self.fail(f"expected = != =~ or !~ after {label}, got {op!r}")
        raw = self.take()
        if raw[:1] not in ('"', "'"):
            self.fail(f"expected a quoted value after {label}{op}, got {raw!r}")
        value = re.sub(r"\\(.)", r"\1", raw[1:-1])
        pattern = None
        if op in ("=~", "!~"):
            try:
                pattern = re.compile(value)
            except re.error as exc:
                self.fail(f"bad regex {value!r}: {exc}")
        return Matcher(label=label, op=op, value=value, pattern=pattern)

    def maybe_range(self, expr: Expr) -> Expr | Range:
        if self.peek() != "[":
            return expr
        self.take()
        seconds = self.duration()
        step: float | None = None
        if self.peek() == ":":
            self.take()
            step = 60.0 if self.peek() == "]" else self.duration()  # Prometheus's default
            if step <= 0:
                self.fail("a subquery step must be positive")
        elif not isinstance(expr, Selector):
            self.fail("only a selector takes a range without a step; use (expr)[d:s]")
        self.expect("]")
        return Range(expr=expr, seconds=seconds, step=step)

    def duration(self) -> float:
        token = self.take()
        if self.kinds[self.pos - 1] != "duration":
            self.fail(f"expected a duration such as 5m, got {token!r}")
        return float(sum(int(n) * _UNIT_SECONDS[u] for n, u in _DURATION_PART.findall(token)))

    def number(self) -> float:
        sign = 1.0
        if self.peek() == "-":
            self.take()
            sign = -1.0
        token = self.take()
        if self.kinds[self.pos - 1] != "number":
            self.fail(f"expected a number, got {token!r}")
        return sign * float(token)

    def label_name(self) -> str:
        token = self.take()
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", token):
            self.fail(f"expected a label name, got {token!r}")
        return token

    # tokens

    def _tokenize(self) -> Iterable[str]:
        pos = 0
        while pos < len(self.text):
            found = _TOKEN.match(self.text, pos)
            if found is None:
                self.fail(f"unexpected {self.text[pos]!r} at position {pos}")
            pos = found.end()
            if found.lastgroup != "space":
                self.kinds.append(found.lastgroup or "")
                yield found.group()

    def peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.tokens[at] if at < len(self.tokens) else ""

    def take(self) -> str:
        token = self.peek()
        if not token:
            self.fail("unexpected end of query")
        self.pos += 1
        return token

    def expect(self, token: str) -> None:
        got = self.take()
        if got != token:
            self.fail(f"expected {token!r}, got {got!r}")

    def fail(self, problem: str) -> NoReturn:
        raise InputError(f"{_SUBSET}: {problem} in {self.text!r}")
