"""The DCGM diagnostics parser on every output shape in tests/fixtures/dcgm/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gpubot.knowledge.dcgm_diag import DiagParseError, DiagReport, cap, parse_diag

FIXTURES = Path(__file__).parents[2] / "fixtures" / "dcgm"


def load(name: str, level: int = 3) -> DiagReport:
    return parse_diag((FIXTURES / name).read_text(), level=level)


def test_dcgm_3_1_real_output_with_banner_and_nulls_passes_on_all_eight_gpus() -> None:
    report = load("dcgm-3.1-pass-banner.txt", level=1)
    assert report.passed
    assert report.version == "3.1.0"
    assert report.gpus() == list(range(8))
    # The CSV gpu_ids of the deployment tests count for every GPU they name.
    denylist = [r for r in report.results if r.test == "Denylist"]
    assert [r.gpu for r in denylist] == list(range(8))
    assert {r.status for r in report.results} == {"pass"}
    assert report.failed_tests() == []
    assert report.summary().startswith("DCGM diagnostics level 1 passed: 10 test(s)")


def test_dcgm_3_3_failure_keeps_dcgm_message_and_error_id() -> None:
    report = load("dcgm-3.3-fail.json")
    assert not report.passed
    assert report.version == "3.3.1"
    [fail] = report.failures
    assert (fail.test, fail.gpu, fail.category) == ("GPU Memory", 0, "Hardware")
    assert fail.error_ids == (51,)
    assert "cuCtxCreate" in fail.messages[0]
    assert report.gpu_status(0) == "fail"
    assert report.gpu_status(1) == "pass"
    # info given as one string (DCGM 3) is kept, tabs folded.
    pcie = next(r for r in report.results if r.test == "PCIe" and r.gpu == 0)
    assert pcie.messages[0].startswith("GPU 0 GPU to Host bandwidth: 24.02 GB/s")
    assert "GPU Memory on GPU 0" in report.summary()
    assert report.failed_tests()[0]["test"] == "GPU Memory"


def test_nvvs_1_7_uppercase_statuses_string_warnings_and_skips() -> None:
    report = load("nvvs-1.7-warn-skip.json")
    assert report.passed  # a warning and skipped tests are not failures
    persistence = [r for r in report.results if r.test == "Persistence Mode"]
    assert {r.status for r in persistence} == {"warn"}
    assert "nvidia-smi -i <gpuId> -pm 1" in persistence[0].messages[0]
    assert {r.status for r in report.results if r.test == "PCIe"} == {"skip"}
    assert "warnings in Persistence Mode" in report.summary()


def test_dcgm_4_entity_results_pass() -> None:
    report = load("dcgm-4.2-pass.json")
    assert report.passed
    assert report.version == "4.2.3"  # from metadata: the 4.x root has no version
    assert report.gpus() == [0, 1, 2, 3]
    diag = next(r for r in report.results if r.test == "diagnostic" and r.gpu == 0)
    assert (
        diag.messages[-1] == "GPU 0 calculated at approximately 859.08 gigaflops during this test"
    )


def test_dcgm_4_failure_warn_and_skip() -> None:
    report = load("dcgm-4.2-fail.json")
    assert not report.passed
    [fail] = report.failures
    assert (fail.test, fail.gpu, fail.error_ids) == ("memory", 2, (51,))
    assert report.gpu_status(0) == "warn"
    assert report.gpu_status(2) == "fail"
    software = next(r for r in report.results if r.test == "software" and r.gpu == 0)
    assert software.error_ids == (29,)
    assert {r.status for r in report.results if r.test == "pcie"} == {"skip"}
    data = report.as_json()
    assert data["passed"] is False
    assert data["failed_tests"] == [{"test": "memory", "gpu": 2, "messages": [fail.messages[0]]}]


def test_dcgm_4_runtime_error_is_not_a_pass() -> None:
    report = load("dcgm-4.2-runtime-error.json", level=1)
    assert not report.passed
    assert report.runtime_error == "Unable to run diagnostic on unsupported GPU 0."
    assert report.summary() == (
        "DCGM diagnostics level 1 did not run: Unable to run diagnostic on unsupported GPU 0."
    )


@pytest.mark.parametrize(
    "name",
    [p.name for p in FIXTURES.iterdir() if p.suffix in (".json", ".txt")],
)
def test_every_fixture_round_trips_through_the_agents_json(name: str) -> None:
    report = load(name)
    again = DiagReport.from_json(json.loads(json.dumps(report.as_json())))
    assert again == report


def test_all_skipped_verifies_nothing() -> None:
    text = json.dumps(
        {
            "DCGM Diagnostic": {
                "test_categories": [
                    {
                        "category": "Integration",
                        "tests": [
                            {
                                "name": "pcie",
                                "results": [
                                    {"entity_group": "GPU", "entity_id": 0, "status": "Skip"}
                                ],
                            }
                        ],
                    }
                ]
            }
        }
    )
    report = parse_diag(text, level=2)
    assert not report.passed
    assert "skipped" in report.summary()


def test_unknown_status_counts_as_a_failure() -> None:
    result = {"entity_group": "GPU", "entity_id": 1, "status": "Inconclusive"}
    category = {"category": "Hardware", "tests": [{"name": "memory", "results": [result]}]}
    text = json.dumps({"DCGM Diagnostic": {"test_categories": [category]}})
    report = parse_diag(text, level=2)
    assert not report.passed
    assert report.failures[0].messages[0] == "unknown DCGM status 'Inconclusive'"


def test_non_gpu_entities_are_left_out() -> None:
    text = json.dumps(
        {
            "DCGM Diagnostic": {
                "test_categories": [
                    {
                        "category": "Hardware",
                        "tests": [
                            {
                                "name": "cpu_eud",
                                "results": [
                                    {"entity_group": "CPU", "entity_id": 0, "status": "Fail"},
                                    {"entity_group": "GPU", "entity_id": 0, "status": "Pass"},
                                ],
                            }
                        ],
                    }
                ]
            }
        }
    )
    assert parse_diag(text, level=3).passed


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "printed no JSON"),
        ("Error: unable to establish a connection", "printed no JSON"),
        ('{"DCGM GPU Diagnostic": {"test_categ', "does not parse"),
        ('[{"a": 1}]', "not an object"),
        ('{"version": "4.2.3"}', "no 'DCGM GPU Diagnostic'"),
        ('{"DCGM Diagnostic": {"test_categories": 5}}', "not a list"),
        ('{"DCGM Diagnostic": {"test_categories": []}}', "no test results"),
        ('{"DCGM Diagnostic": {"test_categories": [{"tests": 1}]}}', "'tests' is not a list"),
        (
            '{"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "x", "results": '
            '[{"gpu_ids": "a,b", "status": "Pass"}]}]}]}}',
            "not integers",
        ),
        ("{" * 5000, "does not parse"),
    ],
)
def test_unparseable_output_is_one_clear_error(text: str, reason: str) -> None:
    with pytest.raises(DiagParseError, match=reason) as info:
        parse_diag(text, level=1)
    assert "\n" not in str(info.value)


def test_messages_are_capped_at_a_word_boundary() -> None:
    long = "word " * 200
    capped = cap(long, 50)
    assert len(capped) <= 50
    assert capped.endswith("word…")
    assert cap("short message") == "short message"
    assert len(cap("x" * 500, 40)) == 40  # one long "word": cut hard
