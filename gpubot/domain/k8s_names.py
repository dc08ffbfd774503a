"""Kubernetes name syntax, checked before any name reaches an API call."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

# Full-matched and ASCII only: `$` would accept a trailing newline, `\d` Unicode digits.
_SUBDOMAIN = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", re.ASCII
)
_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", re.ASCII)
_TAINT_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", re.ASCII
)


def check_node_name(value: str) -> str:
    if len(value) > 253 or not _SUBDOMAIN.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid Kubernetes node name")
    return value


def check_namespace(value: str) -> str:
    if len(value) > 63 or not _LABEL.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid Kubernetes namespace")
    return value


def check_taint_key(value: str) -> str:
    if len(value) > 316 or not _TAINT_KEY.fullmatch(value):
        raise ValueError(f"{value!r} is not a valid taint key")
    return value


NodeName = Annotated[str, AfterValidator(check_node_name)]
Namespace = Annotated[str, AfterValidator(check_namespace)]
PodName = Annotated[str, AfterValidator(check_node_name)]
TaintKey = Annotated[str, AfterValidator(check_taint_key)]
