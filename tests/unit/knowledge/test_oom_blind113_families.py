"""The families of the hundred-and-thirteenth to hundred-and-fifteenth parts (GPU memory in
vision, audio and scientific code; host memory on desktops, laptops and notebooks; CI systems
and build tools): each is read in its own words, and a lookalike beside it is not.

Synthetic lines in each family's own words, never a corpus excerpt."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify


@pytest.mark.parametrize(
    "text",
    [
        # Told by the machine or the user, in a sentence.
        "The laptop keeps saying it is out of memory and then closes every window.\n",
        "The notebook keeps taking up all the 16 GB RAM and then crashes.\n",
        "My session crashes saying the RAM is full.\n",
        "The VM crashes right after a RAM spike when the model loads.\n",
        "htop shows it capped at 6gb. The worker is killed when it hits this.\n",
        "Very high RAM usage when exporting, resulting in notebook crash\n",
        "The cached images in memory are too large, causing the training to crash.\n",
        "Tokenising leads to a memory shortage error and stops the run.\n",
        "cargo fails when linking the final binary, as no memory is left.\n",
        "The log says ld was killed because of an 'Out of memory' error.\n",
        "The job's cap is 4 GB: two workers exceed it and the kernel kills the largest process.\n",
        # macOS's memory-pressure killer, named.
        "These are jetsam kills: see /Library/Logs/DiagnosticReports/JetsamEvent-*.ips\n",
        # Windows' and MSVC's own words.
        "Error 0x80070008: the operation could not complete.\n",
        "Not enough memory resources are available to process this command.\n",
        "LINK : fatal error LNK1102: out of memory\n",
        # The kernel's line quoted short, with its task.
        "the guest log holds `Out of memory: Killed ... task=cc1plus` at 4 GiB\n",
        # Colab's message in Spanish.
        "se me reinicia el entorno porque se utiliza toda la RAM disponible\n",
        # A kill and a maintainer's whole answer, or the finding in a sentence.
        "zsh : killed on the indexer\n\nOut of memory.\n",
        "get an error zsh killed\nThis is because of lack of memory on your machine.\n",
        "I get a dying kernel on the 150 x 150 map.\nThe error was running out of available RAM.\n",
    ],
)
def test_a_host_kill_told_or_found_is_a_host_kill(text: str) -> None:
    assert classify(text).cls == "host_oom_killed"


def test_a_process_said_to_exhaust_dev_shm_is_shared_memory() -> None:
    text = (
        "Chrome uses /dev/shm for its buffers, 64MB on most runners. When Chrome exhausts "
        "this, it crashes in the middle of a test.\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # macOS killing a binary whose signature failed: not memory.
        (
            'zsh: killed\nkernel: proc 412: load code signature error 2 for file "tool"\n',
            "not_oom",
        ),
        ("exit 137; the verifier returns errSecCSSignatureFailed (-67061)\n", "not_oom"),
        # A runner gone, or a kernel crash had, with no cause: a death of unknown cause.
        (
            "The self-hosted runner: build-7 lost communication with the server.\n",
            "killed_unknown",
        ),
        ("I always get a kernel crash at about 30% of training.\n", "killed_unknown"),
    ],
)
def test_each_family_gives_its_class(text: str, expected: str) -> None:
    assert classify(text).cls == expected


@pytest.mark.parametrize(
    ("text", "not_expected"),
    [
        # Jetsam only suspected.
        ("The app gets killed - I suspect it's killed by Jetsam.\n", "host_oom_killed"),
        # The card's memory in the sentence: not the host's.
        ("The GPU memory is too large, causing the training to crash.\n", "host_oom_killed"),
    ],
)
def test_lookalikes_are_not_read_as_the_family(text: str, not_expected: str) -> None:
    assert classify(text).cls != not_expected
