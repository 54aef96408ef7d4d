"""What every section of the rules schema is built from: strict frozen models and durations."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from alertrouter.durations import parse_duration

__all__ = ["Duration", "Section"]


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError("durations need a unit, e.g. 30s, 10m, 2h")
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]


class Section(BaseModel):
    """Unknown keys are errors, so a typo never silently does nothing."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True, populate_by_name=True)
