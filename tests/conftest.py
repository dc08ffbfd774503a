"""Settings for the whole suite."""

from __future__ import annotations

import freezegun
import pytest

# The kubernetes client loads its pydantic models lazily (a module __getattr__). freezegun
# scans every loaded module when a freeze starts, which would load them with FakeDatetime
# patched in and break their schemas. Any test that imported kubernetes (wiring, the kube
# adapter, the CLI) would leave the next freeze_time in the same process broken.
freezegun.configure(extend_ignore_list=["kubernetes"])


# Under pytest-xdist (`scripts/test` runs `-n auto --dist loadgroup`), the tests that share a
# session-wide real part run in one worker, so each part starts once, not once per worker.
_SHARED_PARTS = {
    "tests/integration/kube/": "kube-control-plane",  # etcd, kube-apiserver, the controller
    "tests/integration/slurm/": "slurm-daemons",  # munged, slurmctld, two slurmd
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = item.nodeid.replace("\\", "/")
        for prefix, group in _SHARED_PARTS.items():
            if path.startswith(prefix):
                item.add_marker(pytest.mark.xdist_group(group))
