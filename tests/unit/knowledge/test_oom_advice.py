"""Advice fits the workload, reads "Process N" right, keeps the message's hint, cuts no word."""

from __future__ import annotations

from gpubot.knowledge.oom.triage import EVIDENCE_CHARS, classify, clip

PT2 = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {req}. GPU 0 has a total "
    "capacity of 79.15 GiB of which 12.00 MiB is free. {procs}Of the allocated memory 70.00 GiB "
    "is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated. If reserved "
    "but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
    "to avoid fragmentation.  See documentation for Memory Management  "
    "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
)
HINT = (
    "If reserved but unallocated memory is large try setting "
    "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation."
)


def _pt2(*, req: str = "2.00 GiB", procs: str = "") -> str:
    return PT2.format(req=req, procs=procs)


def test_inference_server_advice_is_about_the_kv_cache_not_batch_size() -> None:
    triage = classify(
        "ERROR 11-18 18:07:28 engine.py:366] ValueError: The model's max seq len (32768) is "
        "larger than the maximum number of tokens that can be stored in KV cache (10240). Try "
        "increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing "
        "the engine."
    )
    assert (triage.cls, triage.workload) == ("cuda_oom", "inference_server")
    advice = " ".join(triage.advice)
    assert "--max-model-len" in advice
    assert "--gpu-memory-utilization" in advice
    assert "gradient accumulation" not in advice
    assert triage.hints == (
        "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when "
        "initializing the engine.",
    )


def test_vllm_start_up_check_says_another_process_holds_the_gpu() -> None:
    triage = classify(
        "ValueError: Free memory on device (6.61/23.64 GiB) on startup is less than desired GPU "
        "memory utilization (0.9, 21.28 GiB). Decrease GPU memory utilization or reduce GPU "
        "memory used by other processes."
    )
    assert triage.workload == "inference_server"
    assert "previous server" in triage.advice[0]


def test_training_advice_for_a_training_loop() -> None:
    triage = classify(
        '  File "train.py", line 80, in <module>\n    loss.backward()\n' + _pt2(req="2.00 GiB")
    )
    assert (triage.cls, triage.workload) == ("cuda_oom", "training")
    assert any("gradient accumulation" in a for a in triage.advice)


def test_process_n_that_matches_the_jobs_own_memory_is_the_job_itself() -> None:
    triage = classify(_pt2(procs="Process 21422 has 70.08 GiB memory in use. "))
    advice = " ".join(triage.advice)
    assert "Process 21422 (70.08 GiB) is this job itself" in advice
    assert "MIG" not in advice


def test_a_second_process_beside_the_job_is_named_as_a_neighbour() -> None:
    procs = "Process 1 has 70.08 GiB memory in use. Process 2 has 9.00 GiB memory in use. "
    advice = " ".join(classify(_pt2(procs=procs)).advice)
    assert "Processes other than this one hold 9.00 GiB" in advice
    assert "MIG" in advice


def test_the_messages_own_hint_is_kept_though_the_line_is_cut() -> None:
    text = _pt2()
    assert len(text) > EVIDENCE_CHARS
    triage = classify(text)
    assert triage.hints == (HINT,)
    assert f"The message's own hint: {HINT}" in triage.advice


def test_evidence_is_cut_at_a_word_boundary_never_mid_word() -> None:
    text = _pt2()
    [line] = classify(text).evidence
    assert line.endswith(" …")
    kept = line.removesuffix(" …")
    assert text.startswith(kept)
    assert text[len(kept)] == " "  # the next character was a space: no word was split
    assert len(line) <= EVIDENCE_CHARS + 2


def test_clip_cuts_one_enormous_token_and_says_so() -> None:
    assert clip("x" * 1000, 100) == "x" * 100 + " …"
    assert clip("short line") == "short line"


def test_fragmentation_advice_fits_the_pytorch_version() -> None:
    new = classify(
        _pt2(req="20.00 MiB").replace("100.00 MiB is reserved", "300.00 MiB is reserved")
    )
    assert new.cls == "cuda_oom_fragmentation"
    assert "expandable_segments:True in the pod's env" in new.advice[0]
    old = classify(
        "RuntimeError: CUDA out of memory. Tried to allocate 512.00 MiB (GPU 0; 15.90 GiB total "
        "capacity; 13.13 GiB already allocated; 415.88 MiB free; 14.80 GiB reserved in total by "
        "PyTorch)"
    )
    assert "max_split_size_mb:128" in old.advice[0]


def test_host_oom_in_a_data_loader_points_at_workers() -> None:
    triage = classify(
        "Out of memory: Killed process 4242 (pt_data_worker) total-vm:9000000kB, "
        "anon-rss:8000000kB\nRuntimeError: DataLoader worker (pid 4242) is killed by signal: "
        "Killed."
    )
    assert (triage.cls, triage.workload) == ("host_oom_killed", "data_loader")
    assert any("num_workers" in a for a in triage.advice)


def test_killed_unknown_says_how_to_find_out() -> None:
    triage = classify("Killed")
    advice = " ".join(triage.advice)
    for where in ("kubectl describe pod", "Last State", "kubectl get events", "journalctl -k"):
        assert where in advice


def test_the_workload_can_be_given_when_the_log_does_not_say() -> None:
    triage = classify(_pt2(), workload_hint="inference_server")
    assert any("--max-model-len" in a for a in triage.advice)


def test_every_failure_that_is_not_about_memory_has_advice_of_its_own() -> None:
    from gpubot.knowledge.oom.advice import OTHER
    from gpubot.knowledge.oom.kills import LAUNCHER_CHILD_EXIT
    from gpubot.knowledge.oom.not_memory import NEGATIVE, NON_MEMORY_EVICTION

    named = {f.name for f in NEGATIVE} | {NON_MEMORY_EVICTION.name, LAUNCHER_CHILD_EXIT.name}
    # An absurd request's advice is built from its numbers (advice._absurd).
    assert named - OTHER.keys() <= {"absurd_request"}
