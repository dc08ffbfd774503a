"""What every settings section shares: strict sections, name patterns, durations."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
)

from gpubot.domain.runbooks.durations import parse_duration

_AUDIENCE = r"^[A-Za-z0-9][A-Za-z0-9._:/-]{0,252}$"
_CRON_FIELD = re.compile(r"[0-9A-Za-z*/,?-]{1,64}", re.ASCII)
_LABEL_KEY = re.compile(
    r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?",
    re.ASCII,
)
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?", re.ASCII)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)


def _duration(value: Any) -> Any:
    return timedelta(seconds=parse_duration(value)) if isinstance(value, str | int) else value
