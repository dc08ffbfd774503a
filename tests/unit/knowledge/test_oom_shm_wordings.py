"""Shared memory (/dev/shm and its kin) out of space in wordings that may never name /dev/shm:
each reads as a shared-memory failure.

Synthetic lines in each family's own words."""

from __future__ import annotations

import pytest

from gpubot.knowledge.oom.triage import classify

SEMLOCK_ERROR_FIRST = """OSError: [Errno 28] No space left on device
  File "worker.py", line 40, in main
    pool = Pool(8)
  File "/usr/lib/python3.10/multiprocessing/pool.py", line 215, in __init__
    self._setup_queues()
  File "/usr/lib/python3.10/multiprocessing/pool.py", line 341, in _setup_queues
    self._inqueue = self._ctx.SimpleQueue()
  File "/usr/lib/python3.10/multiprocessing/context.py", line 113, in SimpleQueue
    return SimpleQueue(ctx=self.get_context())
  File "/usr/lib/python3.10/multiprocessing/queues.py", line 341, in __init__
    self._rlock = ctx.Lock()
  File "/usr/lib/python3.10/multiprocessing/synchronize.py", line 57, in __init__
    sl = self._semlock = _multiprocessing.SemLock(
"""


def test_semlock_enospc_printed_before_its_frames_is_shared_memory() -> None:
    """ENOSPC printed before a traceback that goes through multiprocessing's SemLock, more
    than a few lines away, is /dev/shm: the whole traceback around the error counts."""
    triage = classify(SEMLOCK_ERROR_FIRST)
    assert (triage.cls, triage.family) == ("shm_exhausted", "semlock_enospc")


@pytest.mark.parametrize(
    "text",
    [
        "(app:1270): Gdk-WARNING **: shmget failed: error 28 (No space left on device)\n",
        'No space left on device\n\nTraceback (most recent call last):\n  File "run.py", line 9,'
        ' in <module>\n    q = mp.Queue(maxsize=8)\n  File "/usr/lib/python3.7/multiprocessing/'
        'context.py", line 67, in Lock\n    return Lock(ctx=self.get_context())\n  File '
        '"/usr/lib/python3.7/multiprocessing/synchronize.py", line 162, in __init__\n',
    ],
)
def test_shared_memory_out_of_space_without_dev_shm_named(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "shm_exhausted", triage.family


@pytest.mark.parametrize(
    "text",
    [
        "RuntimeError: unable to write to file </torch_4242_1>: No space left on device (28)\n",
        "FATAL:  could not create shared memory segment: No space left on device\n"
        "DETAIL:  Failed system call was shmget(key=1, size=56, 03600).\n",
        "Crash in the allocator when running out of space in /dev/shm\n"
        "memory_server:34 terminated with signal 7 at PC=7f81381f0523\n",
    ],
)
def test_shared_memory_full_in_other_words(text: str) -> None:
    triage = classify(text)
    assert triage.cls == "shm_exhausted", triage.family


def test_postgres_dynamic_shared_memory_full_is_shared_memory() -> None:
    text = (
        'ERROR:  could not resize shared memory segment "/PostgreSQL.1767612635" to 183552 '
        "bytes: No space left on device\n"
    )
    assert classify(text).cls == "shm_exhausted"


@pytest.mark.parametrize(
    "text",
    [
        # /run/shm is the same tmpfs as /dev/shm on Debian-based systems.
        "RuntimeError: unable to extend /run/shm/pool-3: No space left on device",
        "worker: out of space on /run/shm",
        # ENOSPC on its own line, and the post says /dev/shm (or /run/shm) filled up.
        "OSError: [Errno 28] No space left on device\nchecked df: /dev/shm is full (100%)",
        "each epoch seems to fill up /run/shm\nthen: IOError: No space left on device",
        "No space left on device\n/dev/shm 已满",
    ],
)
def test_enospc_where_the_post_says_shared_memory_filled_up_is_shared_memory(text: str) -> None:
    assert classify(text).cls == "shm_exhausted"


def test_enospc_that_names_a_file_on_a_disk_is_a_disk_whatever_the_post_says() -> None:
    # The write names where it failed; the post's words about /run/shm are not about it.
    text = "No space left on device: /data/ckpt/epoch3.pt\nthe job seems to fill up /run/shm too"
    triage = classify(text)
    assert (triage.cls, triage.family) == ("not_oom", "disk_full")
