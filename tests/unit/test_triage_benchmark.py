"""benchmarks/triage_accuracy.py runs and prints its one JSON line: per-class precision and
recall on each split the corpus files name, overall and held-out accuracy, targets per
held-out split, per-family figures from the eighth part on, and the time taken on hostile
inputs of 1 MB (values not asserted here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]


def corpus() -> list[dict[str, Any]]:
    return [
        entry
        for path in sorted((REPO / "tests" / "fixtures" / "triage").glob("corpus_*.yaml"))
        for entry in yaml.safe_load(path.read_text(encoding="utf-8")) or []
    ]


def test_triage_accuracy_prints_per_class_figures_for_every_split() -> None:
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "triage_accuracy.py")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert len(lines) == 1, run.stdout
    record = json.loads(lines[0])
    assert record["benchmark"] == "triage_accuracy"
    assert record["entries"] == sum(s["n"] for s in record["splits"].values())
    assert set(record["splits"]) >= {
        "train",
        "holdout",
        "fresh",
        "blind",
        "blind2",
        "blind3",
        "blind4",
    }
    for split in record["splits"].values():
        assert 0 <= split["accuracy"] <= 1
        assert split["baseline_majority_class_accuracy"] <= 1
        for figures in split["per_class"].values():
            assert set(figures) == {"n", "precision", "recall"}
        answers = ("confident_wrong", "oom_said_not_oom", "oom_said_confident_not_oom")
        assert all(0 <= split[key] <= split["n"] for key in (*answers, "cannot_tell"))
        assert split["oom_said_confident_not_oom"] <= split["oom_said_not_oom"]
    # Every split the corpus files name but `train` is held out: each has its targets, and
    # each part from the eighth on is reported per family too.
    held_out = {entry["split"] for entry in corpus()} - {"train"}
    assert set(record["splits"]) == held_out | {"train"}
    for part in held_out - {"holdout", "fresh", "blind", *(f"blind{n}" for n in range(2, 8))}:
        per_family = record["splits"][part]["per_family"]
        assert sum(f["n"] for f in per_family.values()) == record["splits"][part]["n"]
    assert 0 <= record["overall_accuracy"] <= 1
    assert 0 <= record["held_out_accuracy"] <= 1
    assert set(record["targets"]) == {
        f"{split}_{figure}"
        for split in held_out
        for figure in ("accuracy", "min_class_recall", "min_class_precision")
    } | {"hostile_input_max_seconds"}
    assert all(seconds >= 0 for seconds in record["hostile_input_seconds"].values())
    for target in record["targets"].values():
        assert isinstance(target["met"], bool)
        assert "at_least" in target or "at_most" in target
    assert record["all_met"] == all(t["met"] for t in record["targets"].values())
    wrong = sum(round(s["n"] * (1 - s["accuracy"])) for s in record["splits"].values())
    assert len(record["misses"]) == wrong


def test_triage_accuracy_reads_a_corpus_given_on_the_command_line(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus_tiny.yaml"
    corpus.write_text(
        "- {id: t-1, split: train, label: cuda_oom, reason: r, text: 'CUDA out of memory.'}\n"
        "- {id: t-2, split: holdout, label: not_oom, reason: r, text: 'all good'}\n"
        "- {id: t-3, split: holdout, label: shm_exhausted, reason: r, text: 'Killed'}\n"
    )
    run = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "triage_accuracy.py"), "--corpus", str(corpus)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    record = json.loads(run.stdout)
    assert record["splits"]["train"]["accuracy"] == 1.0
    assert record["splits"]["holdout"]["accuracy"] == 0.5
    assert record["splits"]["holdout"]["per_class"]["shm_exhausted"]["recall"] == 0.0
    assert record["misses"] == [
        {
            "id": "t-3",
            "split": "holdout",
            "label": "shm_exhausted",
            "got": "killed_unknown",
            "family": "sigkill_cause_unknown",
            "confidence": "medium",
        }
    ]
    assert record["splits"]["holdout"]["confident_wrong"] == 1
    assert record["targets"]["holdout_accuracy"]["met"] is False
    assert "fresh_accuracy" not in record["targets"], "no fresh part, no target for it"
    assert "blind_accuracy" not in record["targets"], "no blind part, no target for it"
