"""The terminal renderer: table cells cut or wrapped at word boundaries, results readable."""

from __future__ import annotations

import io
import json
import re
import textwrap

from hypothesis import given, settings
from hypothesis import strategies as st

from gpubot.backends.console import CELL, ConsoleNotifier, _wrap, cut, readable, render
from gpubot.domain.results import Button, Fields, Message, Table
from gpubot.domain.terminal import safe

LONG = "skipped: condition `not steps.check.output.healthy and not steps.owner.output.foreign`"


def test_cut_ends_at_a_word_boundary_with_an_ellipsis() -> None:
    """A long cell is cut after a whole word, ends with "…", and fits the width."""
    text = cut(LONG, 40)
    assert len(text) <= 40
    assert text.endswith("…")
    assert LONG.startswith(text[:-1])
    assert LONG[len(text) - 1] == " "  # the next character was a space: no word cut


def test_short_text_is_left_alone() -> None:
    """Text within the width comes back unchanged."""
    assert cut("node.cordon", 40) == "node.cordon"


def test_json_results_read_as_key_value_pairs() -> None:
    """A step's JSON result shows as `key: value` pairs, lists in brackets, no braces."""
    result = json.dumps({"node": "gpu-node-07", "lost_gpus": [3], "xid_errors": {"3": [79]}})
    assert readable(result) == "node: gpu-node-07, lost_gpus: [3], xid_errors: 3: [79]"
    assert readable("{not json") == "{not json"


def test_table_wraps_its_last_column_and_cuts_the_others() -> None:
    """The last column wraps onto aligned lines, whole words only; no line is wider than
    the columns allow and no text is lost from the last column."""
    table = Table(("step", "what it would do"), (("cordon " * 12, LONG + " " + LONG),))
    lines = render(Message("Plan", (table,)), indent="")[1:]
    head, rule, *body = lines
    assert set(rule.replace("  ", "")) == {"-"}
    column = head.index("what it would do")
    assert all(len(line) <= column + CELL for line in body)
    assert body[0][:column].rstrip().endswith("…")
    words = " ".join(line[column:].strip() for line in body).split()
    assert words == (LONG + " " + LONG).split()
    assert all(line[:column].strip() == "" for line in body[1:])


FORGED = "disk full\n2026-01-01 INFO gpubot: all clear\x1b[2K\x1b[1A\r\x9b31m\x07"


async def test_every_printed_line_shows_control_characters_as_escapes() -> None:
    """A title, field, table cell and button from an alert with a newline, ANSI sequences,
    a carriage return and a C1 CSI: each stays on its own line, escaped as the CLI shows
    them, and the bot's margin starts every line it prints."""
    out = io.StringIO()
    notifier = ConsoleNotifier(out, channel="#gpu")
    message = Message(
        f"[CRITICAL] GpuXid: {FORGED}",
        (
            Fields((("Node", FORGED),)),
            Table(("step", "what"), ((FORGED, FORGED),)),
            Button(FORGED, action="a", value="v"),
        ),
    )

    await notifier.post(incident_id="inc-1", message=message)

    printed = out.getvalue()
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]", printed)  # only "\n" ends lines
    lines = printed.splitlines()
    assert all(line.startswith(("┣━ ", "┃")) for line in lines), lines
    assert safe(FORGED) in lines[0]
    assert "\\x1b[2K" in printed


@settings(max_examples=500, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from(list("ab -\t\n\r\x0b\x0c\u00a0é")), max_size=80),
    width=st.integers(min_value=1, max_value=70),
)
def test_a_cell_wraps_as_textwrap_wraps_it(text: str, width: int) -> None:
    """The last column's lines are textwrap's, whether or not the cell fits as it is."""
    expected = textwrap.wrap(text, width, break_on_hyphens=False) or [""]
    assert _wrap(text, width) == expected
