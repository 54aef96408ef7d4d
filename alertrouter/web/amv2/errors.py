"""Alertmanager's error shapes, and the query parameters its clients send, read as Alertmanager reads them.

Alertmanager answers a request it cannot act on in one of two shapes, and its clients (amtool, Grafana)
show either as it is: a bare JSON string (a bad `filter`, 400; `"silence invalid: ..."`,
400; `"silence not found"`, 404) from its own handlers, or `{"code": <n>, "message": "..."}` from the
request validation its OpenAPI code does (a body that is no JSON: 400 with code 400; a missing field or
a path id that is no UUID: 422 with codes 602 and 601; too few matchers: 422 with code 612).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from fastapi import Request
from fastapi.responses import JSONResponse, Response

from alertrouter.labels import Matcher, MatcherError, MatchType, parse_matchers

__all__ = [
    "CODE_FORMAT",
    "CODE_INVALID_TYPE",
    "CODE_REQUIRED",
    "CODE_TOO_FEW_ITEMS",
    "AmError",
    "am_error_response",
    "bool_param",
    "filter_matchers",
    "receiver_pattern",
]

# The codes of go-openapi's validation errors, as Alertmanager answers them.
CODE_INVALID_TYPE = 601
CODE_REQUIRED = 602
CODE_TOO_FEW_ITEMS = 612
CODE_FORMAT = 400  # a body that cannot be decoded (the HTTP status is 400 too)


class AmError(Exception):
    """An answer in Alertmanager's shape: `code` None for a bare JSON string, else `{"code", "message"}`."""

    def __init__(self, status: int, message: str, *, code: int | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code


async def am_error_response(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, AmError)
    body: object = exc.message if exc.code is None else {"code": exc.code, "message": exc.message}
    return JSONResponse(body, status_code=exc.status)


_TRUE = frozenset({"true", "1", "t"})
_FALSE = frozenset({"false", "0", "f"})


def bool_param(request: Request, name: str, *, default: bool = True) -> bool:
    """A boolean query parameter (amtool sends `true`/`false`); absent, Alertmanager's default (true).
    Anything else is refused (400, a JSON string) where Alertmanager 0.25 took it silently as false."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise AmError(400, f"{name} in query must be of type boolean: {json.dumps(value)}")


def filter_matchers(texts: Sequence[str]) -> list[Matcher]:
    """The `filter` parameters (each a matcher such as `alertname=~GPU.*`, or a `{...}` list), parsed
    as alertrouter parses matchers everywhere; a bad one answers 400 with the parser's reason."""
    matchers: list[Matcher] = []
    for text in texts:
        try:
            matchers.extend(parse_matchers(text))
        except MatcherError as exc:
            raise AmError(400, str(exc)) from None
    return matchers


def receiver_pattern(request: Request) -> Matcher | None:
    """The `receiver` parameter: a regular expression a receiver's whole name must match (Alertmanager
    anchors it as `^(?:...)$`); None when absent."""
    value = request.query_params.get("receiver")
    if not value:
        return None
    try:
        return Matcher("receiver", MatchType.RE, value)
    except MatcherError as exc:
        raise AmError(400, f"failed to parse receiver param: {exc.reason}") from None
