"""The Kubernetes API stand-in on loopback, and the real client configured against it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from kube_standin import KubeStandin, client_for, serve

from gpubot.backends.kube import KubernetesKubeApi


@pytest.fixture
def standin() -> Iterator[KubeStandin]:
    with serve(KubeStandin()) as s:
        yield s


@pytest.fixture
async def kube(standin: KubeStandin) -> AsyncIterator[KubernetesKubeApi]:
    api = KubernetesKubeApi(client_for(standin))
    yield api
    api.close()
