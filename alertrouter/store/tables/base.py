"""The schema's one `Base` and its column types: naive UTC stored, aware UTC read; JSON as JSONB on PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import JSON, DateTime, MetaData
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

__all__ = ["NAMING", "Base", "JSONType", "UTCDateTime"]


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC: SQLite has no time zones and PostgreSQL's we don't need."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is UTC:  # the common case, without the conversion
            return value.replace(tzinfo=None)
        if value.tzinfo is None:
            raise ValueError("naive datetime passed to the store")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is not None:  # not what the column holds; never shared (equal instants, other zones)
            return value.replace(tzinfo=UTC)
        # One object per instant read: the engine keeps four times per live alert, and the alerts of
        # one evaluation share them (100,000 live alerts held some 300 distinct instants, 440,000 copies).
        shared = _READ_TIMES.get(value)
        if shared is None:
            if len(_READ_TIMES) >= _READ_TIMES_MAX:
                _READ_TIMES.clear()  # a new start rather than an eviction order: refilled within a read
            shared = _READ_TIMES[value] = value.replace(tzinfo=UTC)
        return shared


_READ_TIMES: dict[datetime, datetime] = {}  # naive UTC as read -> the aware datetime handed out for it
_READ_TIMES_MAX = 4096


JSONType = JSON().with_variant(JSONB(), "postgresql")

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {
        datetime: UTCDateTime(),
        dict[str, Any]: JSONType,
        dict[str, str]: JSONType,
    }
