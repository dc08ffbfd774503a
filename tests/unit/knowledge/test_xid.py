"""The XID catalog: NVIDIA's immediate-action buckets as facts, and which ones gpubot remediates."""

from __future__ import annotations

import pytest

from gpubot.knowledge.xid.catalog import RESET_BUCKETS, catalog, explain


@pytest.mark.parametrize(
    ("code", "action"),
    [
        (79, "RESTART_BM"),
        (48, "WORKFLOW_XID_48"),
        (13, "RESTART_APP"),
        (74, "WORKFLOW_NVLINK_ERR"),
        (45, "WORKFLOW_XID_45"),
        (95, "RESET_GPU"),
        (63, "IGNORE"),
        (159, "CHECK_UVM"),
    ],
)
def test_catalog_gives_nvidias_immediate_action(code: int, action: str) -> None:
    info = explain(code)
    assert info is not None
    assert info.action == action


def test_catalog_covers_every_code_nvidia_lists() -> None:
    # NVIDIA's catalog for Ampere and newer lists XIDs 1 to 172 without gaps.
    assert sorted(catalog()) == list(range(1, 173))


def test_codes_with_no_published_bucket_have_no_action_rather_than_a_guess() -> None:
    assert all(explain(code).action is None for code in range(162, 173))  # type: ignore[union-attr]


def test_reset_and_reboot_buckets_map_to_the_xid79_runbook() -> None:
    for info in catalog().values():
        expected = "xid79" if info.action in RESET_BUCKETS else None
        assert info.runbook == expected, info.code
    assert explain(79).runbook == "xid79"  # type: ignore[union-attr]
    assert explain(13).runbook is None  # type: ignore[union-attr]


def test_unknown_code_is_none() -> None:
    assert explain(999) is None
    assert explain(0) is None


def test_as_json_has_the_documented_keys() -> None:
    info = explain(79)
    assert info is not None
    assert info.as_json() == {
        "xid": 79,
        "name": "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS",
        "action": "RESTART_BM",
        "description": info.description,
        "runbook": "xid79",
    }


def test_every_entry_has_a_short_description_and_a_mnemonic() -> None:
    for info in catalog().values():
        assert info.name.isupper() or "_" in info.name
        assert 0 < len(info.description) <= 200
