"""Alertmanager-style label matchers: parsing, the four operators and anchored regexes."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpubot.domain.incidents.matchers import Matcher, all_match, parse_matcher

LABELS = {"alertname": "GPUXidError", "xid": "79", "gpu": "3", "Hostname": "gpu-node-07"}


@pytest.mark.parametrize(
    ("text", "name", "op", "value"),
    [
        ('xid="79"', "xid", "=", "79"),
        ("xid=79", "xid", "=", "79"),
        ('xid!="79"', "xid", "!=", "79"),
        ("xid!=79", "xid", "!=", "79"),
        ('gpu=~"[0-3]"', "gpu", "=~", "[0-3]"),
        ("gpu=~[0-3]", "gpu", "=~", "[0-3]"),
        ('gpu!~"[0-3]"', "gpu", "!~", "[0-3]"),
        ('  xid = "79"  ', "xid", "=", "79"),
        ('_private="x"', "_private", "=", "x"),
        ('team=""', "team", "=", ""),
        ("team=", "team", "=", ""),
        ('msg="two words"', "msg", "=", "two words"),
    ],
)
def test_parse_quoted_and_unquoted(text: str, name: str, op: str, value: str) -> None:
    """Both `name="v"` and `name=v` parse to the same name, operator and value."""
    matcher = parse_matcher(text)
    assert (matcher.name, matcher.op, matcher.value) == (name, op, value)
    assert (matcher.pattern is not None) == (op in ("=~", "!~"))


def test_escaped_quote_and_backslash_in_a_quoted_value() -> None:
    r"""`\"` is a literal quote and `\\` a literal backslash inside a quoted value."""
    assert parse_matcher(r'msg="say \"hi\""').value == 'say "hi"'
    assert parse_matcher(r'path="C:\\gpu"').value == "C:\\gpu"
    assert parse_matcher(r'msg="say \"hi\""').matches({"msg": 'say "hi"'})


def test_str_round_trips_to_the_quoted_form() -> None:
    """str(matcher) is the canonical quoted form, which parses back to an equal matcher."""
    matcher = parse_matcher("gpu=~[0-3]")
    assert str(matcher) == 'gpu=~"[0-3]"'
    again = parse_matcher(str(matcher))
    assert (again.name, again.op, again.value) == (matcher.name, matcher.op, matcher.value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('xid="79"', True),
        ('xid="7"', False),
        ('xid!="79"', False),
        ('xid!="13"', True),
        ('gpu=~"[0-3]"', True),
        ('gpu=~"[4-7]"', False),
        ('gpu!~"[0-3]"', False),
        ('gpu!~"[4-7]"', True),
        ('Hostname=~"gpu-node-.*"', True),
        ('alertname=~"GPU.*|Node.*"', True),
    ],
)
def test_the_four_operators(text: str, expected: bool) -> None:
    """`=` and `!=` compare exactly; `=~` and `!~` test a regex, `!` negating."""
    assert parse_matcher(text).matches(LABELS) is expected


@pytest.mark.parametrize(
    ("text", "value", "expected"),
    [
        ('gpu=~"1"', "10", False),
        ('gpu=~"1"', "21", False),
        ('gpu=~"1"', "1", True),
        ('gpu!~"1"', "10", True),
        ('alertname=~"GPU"', "GPUXidError", False),
        ('alertname=~"Xid"', "GPUXidError", False),
        ('alertname=~"a|b"', "ab", False),
        ('alertname=~"a|b"', "b", True),
    ],
)
def test_regex_is_fully_anchored_like_alertmanager(text: str, value: str, expected: bool) -> None:
    """A regex must match the whole value: `gpu=~"1"` does not match "10" (nor `a|b` "ab")."""
    name = text.split("=")[0].rstrip("!")
    assert parse_matcher(text).matches({name: value}) is expected


def test_missing_label_reads_as_empty_string() -> None:
    """As in Alertmanager, an absent label equals "" for every operator."""
    assert parse_matcher('xid=""').matches({})
    assert not parse_matcher('xid="79"').matches({})
    assert parse_matcher('xid!="79"').matches({})
    assert not parse_matcher('xid!=""').matches({})
    assert parse_matcher('xid=~".*"').matches({})
    assert not parse_matcher('xid=~".+"').matches({})
    assert parse_matcher('xid!~".+"').matches({})


@pytest.mark.parametrize(
    "text",
    [
        "",
        "xid",
        '"79"',
        'xid=="79"',
        'xid~="79"',
        'xid<"79"',
        '9xid="79"',
        'gpu-id="3"',
        'xid="79',
        'xid=79"',
        'xid="7"9"',
        "xid=7 9",
        'xid="79" gpu="3"',
        r'xid="79\"',
    ],
)
def test_malformed_matcher_raises_readable_value_error(text: str) -> None:
    """A malformed matcher raises ValueError quoting the input and showing an example."""
    with pytest.raises(ValueError, match="not a label matcher") as caught:
        parse_matcher(text)
    message = str(caught.value)
    assert repr(text) in message
    assert 'xid="79"' in message
    assert "\n" not in message


@pytest.mark.parametrize("text", ['gpu=~"[0-3"', 'gpu!~"(a"', 'gpu=~"*"', 'gpu=~"a{2,1}"'])
def test_bad_regex_raises_value_error(text: str) -> None:
    """An uncompilable regex is a ValueError naming the matcher, not a re.error."""
    with pytest.raises(ValueError, match="bad regular expression") as caught:
        parse_matcher(text)
    assert repr(text) in str(caught.value)
    assert isinstance(caught.value.__cause__, re.error)


def test_all_match_needs_every_matcher() -> None:
    """all_match is a conjunction; no matchers at all matches everything."""
    xid = parse_matcher('xid="79"')
    gpu = parse_matcher('gpu=~"[0-3]"')
    other_gpu = parse_matcher('gpu=~"[4-7]"')
    assert all_match((xid, gpu), LABELS)
    assert not all_match((xid, other_gpu), LABELS)
    assert all_match((), {})


def test_matcher_is_immutable() -> None:
    """A parsed matcher cannot be changed in place."""
    matcher = parse_matcher('xid="79"')
    with pytest.raises(AttributeError):
        matcher.value = "13"  # type: ignore[misc]
    assert isinstance(matcher, Matcher)


@given(value=st.text(alphabet=st.characters(codec="ascii", exclude_characters='"\\\n\r')))
def test_equality_matcher_matches_exactly_its_own_value(value: str) -> None:
    """For any quoted ASCII value v, `l="v"` matches {l: v} and `l!="v"` does not."""
    assert parse_matcher(f'l="{value}"').matches({"l": value})
    assert not parse_matcher(f'l!="{value}"').matches({"l": value})
    assert not parse_matcher(f'l="{value}"').matches({"l": value + "x"})


@given(value=st.text(alphabet="abc019", min_size=1), extra=st.text(alphabet="abc019", min_size=1))
def test_literal_regex_never_matches_a_longer_value(value: str, extra: str) -> None:
    """A literal regex is anchored both ends: it never matches the value with a suffix or prefix."""
    matcher = parse_matcher(f'l=~"{value}"')
    assert matcher.matches({"l": value})
    assert not matcher.matches({"l": value + extra})
    assert not matcher.matches({"l": extra + value})


def test_non_ascii_quoted_value_is_kept() -> None:
    """A quoted UTF-8 value (Alertmanager allows them) must match that label value."""
    assert parse_matcher('team="café"').value == "café"


def test_regex_class_escape_in_quoted_value_parses_cleanly() -> None:
    r"""`gpu=~"\d+"` is a normal regex; parsing it must not emit a DeprecationWarning."""
    assert parse_matcher(r'gpu=~"\d+"').matches({"gpu": "12"})
