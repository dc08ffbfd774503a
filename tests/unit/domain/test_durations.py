"""Durations as runbooks write them: unit suffixes, compound forms and plain seconds."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpubot.domain.runbooks.durations import parse_duration


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30.0),
        ("5m", 300.0),
        ("1h", 3600.0),
        ("1h30m", 5400.0),
        ("250ms", 0.25),
        ("1m500ms", 60.5),
        ("2d", 172800.0),
        ("1.5s", 1.5),
        ("0s", 0.0),
        ("  10m  ", 600.0),
        (90, 90.0),
        (0, 0.0),
        (2.5, 2.5),
    ],
)
def test_parse_valid_durations(text: str | int | float, seconds: float) -> None:
    """Suffixed strings, compound strings and plain numbers all give seconds as a float."""
    value = parse_duration(text)
    assert value == pytest.approx(seconds)
    assert isinstance(value, float)


@pytest.mark.parametrize(
    "text",
    ["5 minutes", "5", "m", "5M", "1h 30m", "-5s", "5s!", "s5", "1.5.2s", "five seconds", "5sec"],
)
def test_reject_malformed_strings_with_an_example(text: str) -> None:
    """A string that is not a duration is a ValueError quoting it and showing the syntax."""
    with pytest.raises(ValueError, match="not a duration") as caught:
        parse_duration(text)
    assert repr(text) in str(caught.value)
    assert "30s, 5m, 1h30m" in str(caught.value)


@pytest.mark.parametrize("text", ["", "   "])
def test_reject_empty(text: str) -> None:
    """An empty or blank duration is refused as empty."""
    with pytest.raises(ValueError, match="empty duration"):
        parse_duration(text)


@pytest.mark.parametrize("value", [-1, -0.5])
def test_reject_negative_numbers(value: float) -> None:
    """A negative number of seconds is refused."""
    with pytest.raises(ValueError, match="must not be negative"):
        parse_duration(value)


@pytest.mark.parametrize("value", [True, False])
def test_reject_booleans(value: bool) -> None:
    """YAML `yes`/`true` is a bool, not a count of seconds, even though bool is an int."""
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(value)


@given(
    hours=st.integers(min_value=0, max_value=99),
    minutes=st.integers(min_value=0, max_value=59),
    seconds=st.integers(min_value=0, max_value=59),
)
def test_compound_duration_is_the_sum_of_its_parts(hours: int, minutes: int, seconds: int) -> None:
    """`<h>h<m>m<s>s` is always h*3600 + m*60 + s."""
    expected = hours * 3600 + minutes * 60 + seconds
    assert parse_duration(f"{hours}h{minutes}m{seconds}s") == expected


@given(value=st.integers(min_value=0, max_value=10**9))
def test_seconds_as_string_and_as_number_agree(value: int) -> None:
    """`<n>s` and the number n give the same duration."""
    assert parse_duration(f"{value}s") == parse_duration(value) == value


def test_reject_nan() -> None:
    """`timeout: .nan` in YAML must not become a timeout that compares false with everything."""
    with pytest.raises(ValueError, match="duration"):
        parse_duration(float("nan"))
