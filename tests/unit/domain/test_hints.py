"""GPU hints from alert labels: what a label says is used when it is well formed and is
unknown otherwise (never a refused step); a value given on purpose is still checked."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, ValidationError

from gpubot.domain.incidents.gpu_labels import BusIdHint, GpuIndexHint, GpuUuid, UuidHint, XidHint


class Labels(BaseModel):
    xid: XidHint = None
    gpu: GpuIndexHint = None
    uuid: UuidHint = ""
    bus: BusIdHint = ""


class Given(BaseModel):
    uuid: GpuUuid = ""


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("79", 79),
        (" 79 ", 79),
        ("0079", 79),
        (79, 79),
        ("65535", 65535),
        ("65536", None),  # not an XID code
        ("٧٩", None),  # Arabic-Indic digits: int() would read 79
        ("7\n9", None),
        ("79; rm -rf /", None),
        ("", None),
        (None, None),
        ("9" * 40, None),
    ],
)
def test_an_xid_label_is_a_code_or_unknown(text: object, code: int | None) -> None:
    assert Labels.model_validate({"xid": text}).xid == code


@pytest.mark.parametrize(("text", "index"), [("3", 3), ("", None), ("None", None), (None, None)])
def test_a_blank_gpu_label_is_unknown(text: object, index: int | None) -> None:
    assert Labels.model_validate({"gpu": text}).gpu == index


def test_a_gpu_index_outside_the_node_is_refused() -> None:
    with pytest.raises(ValidationError):
        Labels.model_validate({"gpu": "64"})


@pytest.mark.parametrize(
    ("text", "uuid"),
    [
        ("GPU-5a1b2c3d-0000-1111-2222-333344445555", "GPU-5a1b2c3d-0000-1111-2222-333344445555"),
        ("MIG-abc", "MIG-abc"),
        ("GPU-abc\n", ""),
        ("http://169.254.169.254/", ""),
        (42, ""),
    ],
)
def test_a_uuid_label_not_shaped_like_one_is_no_hint(text: object, uuid: str) -> None:
    assert Labels.model_validate({"uuid": text}).uuid == uuid


def test_a_bus_id_label_is_normalised_or_dropped() -> None:
    assert Labels.model_validate({"bus": "0000:3B:00.0"}).bus == "0000:3b:00.0"
    assert Labels.model_validate({"bus": "not a bus"}).bus == ""


def test_a_uuid_given_on_purpose_is_refused_when_malformed() -> None:
    assert Given.model_validate({"uuid": ""}).uuid == ""
    with pytest.raises(ValidationError):
        Given.model_validate({"uuid": "GPU-abc\n"})
