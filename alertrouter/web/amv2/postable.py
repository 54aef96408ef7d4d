"""A posted silence (Alertmanager's `postableSilence`), read and checked the way Alertmanager does, so that
its refusals have Alertmanager's shapes: a body that is no JSON, or a field of the wrong type, answers
400 `{"code": 400, ...}`; a missing field 422 `{"code": 602, ...}`; no matchers 422 `{"code": 612, ...}`.
What the fields mean (times, matcher values) is checked afterwards, by `operations.create_silence`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from alertrouter.labels import Matcher, MatcherError, MatchType
from alertrouter.model import NAME_MAX
from alertrouter.web.amv2.errors import CODE_FORMAT, CODE_REQUIRED, CODE_TOO_FEW_ITEMS, AmError

__all__ = ["MAX_COMMENT", "Postable", "read_postable"]

_REQUIRED = ("matchers", "startsAt", "endsAt", "createdBy", "comment")  # the schema's order
_MATCHER_REQUIRED = ("name", "value", "isRegex")
MAX_COMMENT = 1000  # as `POST /api/v1/silences`


@dataclass(frozen=True, slots=True)
class Postable:
    matchers: list[str]  # Alertmanager matcher strings (`name=~"value"`)
    starts_at: datetime
    ends_at: datetime
    created_by: str
    comment: str
    id: str | None = None


def _undecodable(reason: str) -> AmError:
    return AmError(400, f"parsing silence body failed, because {reason}", code=CODE_FORMAT)


def _typed(data: dict[str, Any], name: str, kind: type, where: str) -> Any:
    value = data[name]
    if not isinstance(value, kind):
        json_type = {str: "string", bool: "boolean", list: "array"}.get(kind, kind.__name__)
        raise _undecodable(f"{where}{name} must be a {json_type}, not {json.dumps(value)[:64]}")
    return value


def _instant(data: dict[str, Any], name: str) -> datetime:
    """An RFC 3339 time with its offset; fractions beyond microseconds (Go's nanoseconds) are cut."""
    text: str = _typed(data, name, str, "")
    head, dot, rest = text.partition(".")
    if dot:
        digits = len(rest) - len(rest.lstrip("0123456789"))
        text = f"{head}.{rest[: min(digits, 6)]}{rest[digits:]}"
    try:
        value = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise _undecodable(f"{name} {json.dumps(data[name])[:64]} is not an RFC 3339 time") from None
    if value.tzinfo is None or "T" not in text.upper():
        raise _undecodable(f"{name} {json.dumps(data[name])[:64]} is not an RFC 3339 time with an offset")
    return value


def _matcher(item: Any, index: int) -> str:
    """One of Alertmanager's matchers as alertrouter keeps it: `isEqual` false negates (`!=`, `!~`)."""
    if not isinstance(item, dict):
        raise _undecodable(f"matchers.{index} must be an object")
    for field in _MATCHER_REQUIRED:
        if item.get(field) is None:
            raise AmError(422, f"matchers.{index}.{field} in body is required", code=CODE_REQUIRED)
    where = f"matchers.{index}."
    name: str = _typed(item, "name", str, where)
    value: str = _typed(item, "value", str, where)
    regex: bool = _typed(item, "isRegex", bool, where)
    equal: bool = True if item.get("isEqual") is None else _typed(item, "isEqual", bool, where)
    kind = (MatchType.RE if equal else MatchType.NRE) if regex else (MatchType.EQ if equal else MatchType.NE)
    try:
        return str(Matcher(name, kind, value))
    except MatcherError as exc:
        raise AmError(400, f"silence invalid: invalid label matcher {index}: {exc.reason}") from None


def read_postable(body: bytes) -> Postable:
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _undecodable(f"the body is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _undecodable("the body is not a JSON object")
    for name in _REQUIRED:
        if data.get(name) is None:
            raise AmError(422, f"{name} in body is required", code=CODE_REQUIRED)
    items: list[Any] = _typed(data, "matchers", list, "")
    if not items:
        raise AmError(422, "matchers in body should have at least 1 items", code=CODE_TOO_FEW_ITEMS)
    created_by: str = _typed(data, "createdBy", str, "")
    comment: str = _typed(data, "comment", str, "")
    for field, text, most in (("createdBy", created_by, NAME_MAX), ("comment", comment, MAX_COMMENT)):
        if len(text) > most:  # what the store keeps (a longer name fails on PostgreSQL as a store error)
            raise AmError(400, f"silence invalid: {field}: at most {most} characters, not {len(text)}")
    silence_id = data.get("id")
    if silence_id is not None and not isinstance(silence_id, str):
        raise _undecodable("id must be a string")
    return Postable(
        matchers=[_matcher(item, i) for i, item in enumerate(items)],
        starts_at=_instant(data, "startsAt"),
        ends_at=_instant(data, "endsAt"),
        created_by=created_by,
        comment=comment,
        id=silence_id or None,
    )
