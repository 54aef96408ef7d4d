"""The payload-at-once path: payloads whose every alert passes, decoded in C (msgspec) with the limits held
by the decoder itself, without building a message for anything.

What Alertmanager and Prometheus send is almost always of this kind, so this is what ingest costs. A
payload it refuses for any reason (a refused alert, a field it does not know, a U+0000, a time it cannot
read) goes to `payloads`' pydantic path, alert by alert, which names every problem; so nothing here may
accept what that path refuses, or keep another value than it keeps (`tests/ingest/test_decode.py` holds
the two paths equal on hostile payloads). Times are read by pydantic's own validator, once per distinct
text (then kept: `_KNOWN_TIMES`), so a time means here what it means there (it truncates Go's nanoseconds where a
plain decoder would round them, and an alert stored by one path must compare equal when re-sent to the
other).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from operator import methodcaller
from typing import Annotated, Any, Literal, Protocol

import msgspec
from pydantic import BeforeValidator, TypeAdapter, ValidationError
from pydantic_core import PydanticCustomError

from alertrouter.ingest.limits import (
    MAX_ALERTNAME,
    MAX_ANNOTATION_VALUE,
    MAX_ANNOTATIONS,
    MAX_GENERATOR_URL,
    MAX_LABEL_VALUE,
    MAX_LABELS,
    MAX_NAME,
    check_instant,
)

__all__ = ["Checked", "Fields", "Rfc3339", "non_empty", "pushes", "webhook_alerts"]


class Fields(Protocol):
    """What both paths keep of an alert besides its labels and times."""

    @property
    def annotations(self) -> dict[str, str]: ...

    @property
    def generator_url(self) -> str: ...


# An alert through the boundary: its fields, its labels (empty values dropped), and its times in UTC
# (None where not set).
Checked = tuple[Any, dict[str, str], datetime | None, datetime | None]

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _rfc3339_text(value: Any) -> Any:
    """Alertmanager's `strfmt.DateTime` reads RFC 3339 text only: a JSON number, or unix seconds as
    text, which pydantic would read as a time, is refused (its 400 names the field). Any other text is
    left to pydantic's validator, which words its own problems."""
    if isinstance(value, str) and (_DATE.match(value) is not None or not _number(value)):
        return value
    raise PydanticCustomError("rfc3339", "expected an RFC 3339 date-time string, e.g. 2026-01-01T00:00:00Z")


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# A time of either ingest path: RFC 3339 text, read by pydantic's own datetime validator.
Rfc3339 = Annotated[datetime, BeforeValidator(_rfc3339_text)]

_Name = Annotated[str, msgspec.Meta(max_length=MAX_NAME)]
_LabelName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME)]
_Labels = Annotated[
    dict[_LabelName, Annotated[str, msgspec.Meta(max_length=MAX_LABEL_VALUE)]], msgspec.Meta(max_length=MAX_LABELS)
]
_Annotations = Annotated[
    dict[_Name, Annotated[str, msgspec.Meta(max_length=MAX_ANNOTATION_VALUE)]],
    msgspec.Meta(max_length=MAX_ANNOTATIONS),
]
_GeneratorURL = Annotated[str, msgspec.Meta(max_length=MAX_GENERATOR_URL)]


# The limits apply to the labels as sent, empty values included: stricter than the alert-by-alert
# check (which drops them first), so what passes here passes there. Unknown fields are refused, so a
# payload with anything else (a snake_case name pydantic would also take, a field of a newer sender)
# goes the other way.
class _Push(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    labels: _Labels
    annotations: _Annotations = {}
    starts_at: str | None = msgspec.field(default=None, name="startsAt")
    ends_at: str | None = msgspec.field(default=None, name="endsAt")
    generator_url: _GeneratorURL = msgspec.field(default="", name="generatorURL")


class _WebhookAlert(msgspec.Struct, forbid_unknown_fields=True, gc=False):
    status: Literal["firing", "resolved"]
    labels: _Labels
    starts_at: str = msgspec.field(name="startsAt")
    annotations: _Annotations = {}
    ends_at: str | None = msgspec.field(default=None, name="endsAt")
    generator_url: _GeneratorURL = msgspec.field(default="", name="generatorURL")
    fingerprint: str | None = None


_PUSHES = msgspec.json.Decoder(list[_Push])
_WEBHOOK_ALERTS = list[_WebhookAlert]
_TIMES: TypeAdapter[list[datetime]] = TypeAdapter(list[Rfc3339])  # the models' own datetime validator
_ALERTNAME = methodcaller("get", "alertname", "")
# Times as kept, by their text (None: not sent): Prometheus sends an alert's `startsAt` again with every
# push, and the `endsAt` of one evaluation is shared by its alerts. A refused text is never kept. All are
# forgotten at once when there are too many (each is cheap to read again).
_KNOWN_TIMES: dict[str | None, datetime | None] = {None: None}
_KNOWN_TIMES_MAX = 16384
_NUL = b"\\u0000"  # JSON can carry U+0000 only escaped; the other path replaces it (`payloads._without_nul`)


def non_empty(labels: dict[str, str]) -> dict[str, str]:
    """An empty label value means the label is absent, as in Prometheus and Alertmanager; dropping it
    keeps fingerprints equal to Alertmanager's."""
    return labels if all(labels.values()) else {k: v for k, v in labels.items() if v}


class _Refused(Exception):
    """Something in the payload is refused: it goes the other way."""


def _utc(value: datetime) -> datetime | None:
    """A validated time as the boundary keeps it: None for Go's zero time (not set), else the instant in
    UTC; `_Refused` where `limits.check_instant` finds a problem (the other path names it)."""
    if value.year <= 1:
        return None
    if isinstance(instant := check_instant(value, ""), str):
        raise _Refused
    return instant


def pushes(body: bytes) -> list[Checked] | None:
    """A `POST /api/v2/alerts` body's alerts, straight from its bytes; None when any would be refused."""
    if _NUL in body:
        return None
    try:
        alerts = _PUSHES.decode(body)
    except msgspec.DecodeError:  # malformed JSON, or any alert refused (ValidationError is a DecodeError)
        return None
    return _finish(alerts)


def webhook_alerts(raw: list[Any]) -> list[Checked] | None:
    """A webhook's `alerts`, as its envelope parsed them; None when any would be refused."""
    try:
        alerts = msgspec.convert(raw, _WEBHOOK_ALERTS)
    except msgspec.ValidationError:
        return None
    return _finish(alerts)


def _finish(alerts: Sequence[_Push | _WebhookAlert]) -> list[Checked] | None:
    """The two checks the decoder cannot hold (a label set left empty once its empty values are dropped,
    the alertname's length) and the times; None as soon as anything is refused."""
    label_sets = [non_empty(a.labels) for a in alerts]
    if label_sets and (min(map(len, label_sets)) == 0 or max(map(len, map(_ALERTNAME, label_sets))) > MAX_ALERTNAME):
        return None
    known = _KNOWN_TIMES
    if len(known) > _KNOWN_TIMES_MAX:
        known.clear()
        known[None] = None
    if unread := list({text for a in alerts for text in (a.starts_at, a.ends_at) if text not in known}):
        try:
            known.update(zip(unread, map(_utc, _TIMES.validate_python(unread)), strict=True))
        except (ValidationError, _Refused):
            return None
    instant = known.__getitem__
    return [(a, labels, instant(a.starts_at), instant(a.ends_at)) for a, labels in zip(alerts, label_sets, strict=True)]
