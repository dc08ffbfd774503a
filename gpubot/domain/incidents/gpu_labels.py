"""What an alert's labels say about a GPU, read as hints: the XID, the GPU's index, its UUID,
its PCI bus id. A hint that is absent or malformed (hostile text included) is unknown, never
a failed step: the GPU acted on is the one the node agent reports. Runbook parameters that
take such a label are these types."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from gpubot.knowledge.outside_numbers import ascii_int, is_gpu_uuid
from gpubot.knowledge.pci import normalise_bus_id

# A GPU UUID as NVML and DCGM print it (MIG instances too), or empty for unknown.
UUID_PATTERN = r"^((GPU|MIG)-[0-9A-Za-z-]{1,64})?$"


def blank_is_none(value: Any) -> Any:
    return None if value in ("", None, "None") else value


def lenient_xid(value: Any) -> int | None:
    """An XID code from a rendered label, or None: absent, not ASCII digits, or over 65535."""
    code = ascii_int(str(value).strip()) if value is not None else None
    return code if code is not None and code <= 65535 else None


def lenient_uuid(value: Any) -> str:
    """A label's UUID, or "" when it is not shaped like one."""
    return value if isinstance(value, str) and is_gpu_uuid(value) else ""


def lenient_bus_id(value: Any) -> str:
    """A PCI bus id in NVML's form, or "" when the text is not one."""
    return (normalise_bus_id(value) or "") if isinstance(value, str) and value else ""


XidHint = Annotated[int | None, BeforeValidator(lenient_xid)]
GpuIndexHint = Annotated[Annotated[int, Field(ge=0, le=63)] | None, BeforeValidator(blank_is_none)]
UuidHint = Annotated[str, Field(pattern=UUID_PATTERN), BeforeValidator(lenient_uuid)]
BusIdHint = Annotated[str, Field(max_length=40), BeforeValidator(lenient_bus_id)]
# A UUID given on purpose (a step's argument, not a label): empty or well formed, else refused.
GpuUuid = Annotated[str, Field(pattern=UUID_PATTERN)]
