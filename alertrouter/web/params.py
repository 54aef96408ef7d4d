"""Bad path and query parameters: one 400 naming the parameter, as the rest of the API answers.

FastAPI answers a parameter it cannot read with 422 and a list of pydantic errors; the API's own 400s
are `{"detail": "<parameter>: <problem>"}`, so `problem_of` words the first error that way. U+0000 is
refused in every path and query parameter of the API and the console before anything reads it:
PostgreSQL's text cannot hold it, and a lookup by such a value failed as a store error (503, an outage
logged) where the value was simply wrong. The ingest endpoints take no parameter and keep their own
handling of U+0000 in a payload (`alertrouter.ingest.payloads`).
"""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.exceptions import RequestValidationError
from fastapi.params import Depends as DependsParam

from alertrouter.ingest.limits import shown

__all__ = ["NO_NUL", "NUL_PROBLEM", "BadParameter", "is_console", "problem_of", "refuse_nul"]

NUL_PROBLEM = "contains U+0000 (NUL), which is not allowed"
_PLAIN_NAME = 64  # characters of a parameter's name shown as it is


class BadParameter(Exception):
    """A path or query parameter refused before the route reads it: answered 400 (JSON, or a console page)."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"{name}: {problem}")
        self.name = name
        self.problem = problem


def _name(text: str) -> str:
    """A parameter's name as an answer shows it: a plain one as it is, others quoted and cut
    (`limits.shown`), so that U+0000 or 20,000 characters in a name do not reach the answer as sent."""
    return text if text.isprintable() and 0 < len(text) <= _PLAIN_NAME else shown(text)


async def refuse_nul(request: Request) -> None:
    """Raises `BadParameter` for the first path or query parameter (name or value) holding U+0000."""
    for name, value in request.path_params.items():
        if isinstance(value, str) and "\x00" in value:
            raise BadParameter(name, NUL_PROBLEM)
    for name, value in request.query_params.multi_items():
        if "\x00" in name or "\x00" in value:
            raise BadParameter(_name(name), NUL_PROBLEM)


NO_NUL: list[DependsParam] = [Depends(refuse_nul)]


def problem_of(exc: RequestValidationError) -> BadParameter:
    """The first problem FastAPI found, named by its parameter (`offset`, `incident_id`, or a body
    field's path such as `matchers.0`)."""
    errors = exc.errors()
    if not errors:
        return BadParameter("request", "could not be read")
    error = errors[0]
    where = [str(part) for part in error.get("loc", ())[1:]]
    return BadParameter(_name(".".join(where)) if where else "request", str(error.get("msg", "invalid")))


def is_console(request: Request) -> bool:
    """Whether the route is a console page (answered with a page, not JSON): those are left out of
    the OpenAPI schema, the API's routes are in it."""
    route = request.scope.get("route")
    return route is not None and getattr(route, "include_in_schema", True) is False
