"""The real control plane (once per session, and an RBAC one when a test asks), each test's
corner of it, and the hand-written stand-in for the faults the real server cannot produce."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from control_plane import ControlPlane, start
from kube_cluster import Cluster
from kube_standin import KubeStandin, client_for, serve

from gpubot.backends.kube import KubernetesKubeApi


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd, kube-apiserver (AlwaysAllow) and the disruption controller, for every test."""
    plane = start(tmp_path_factory.mktemp("k8s"), rbac=False)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def rbac_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A second control plane with --authorization-mode=RBAC, started only if a test asks."""
    plane = start(tmp_path_factory.mktemp("k8s-rbac"), rbac=True)
    try:
        yield plane
    finally:
        plane.stop()


@pytest.fixture
def cluster(control_plane: ControlPlane) -> Iterator[Cluster]:
    c = Cluster(control_plane)
    try:
        yield c
    finally:
        c.cleanup()


@pytest.fixture
def rbac_cluster(rbac_plane: ControlPlane) -> Iterator[Cluster]:
    c = Cluster(rbac_plane)
    try:
        yield c
    finally:
        c.cleanup()


@pytest.fixture
async def kube(cluster: Cluster) -> AsyncIterator[KubernetesKubeApi]:
    """KubernetesKubeApi on the real server, through a client that records its requests."""
    api = KubernetesKubeApi(cluster.client())
    yield api
    api.close()


@pytest.fixture
def standin() -> Iterator[KubeStandin]:
    with serve(KubeStandin()) as s:
        yield s


@pytest.fixture
async def standin_kube(standin: KubeStandin) -> AsyncIterator[KubernetesKubeApi]:
    api = KubernetesKubeApi(client_for(standin))
    yield api
    api.close()
