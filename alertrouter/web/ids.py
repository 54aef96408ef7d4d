"""Integer ids in paths and queries, and the paging parameters, bounded once for every route before
they reach the store.

Every id column is an INTEGER: PostgreSQL's holds -2^31 .. 2^31-1 and asyncpg refuses anything beyond
(a "database error", 503), SQLite's holds 64 bits and its driver overflows past them (500). Rows are
numbered from 1, so an id outside 1 .. 2^31-1 names nothing on either store: a path id out of range
is answered exactly as an absent row is (404, with the route's own words), a query id with a 400
naming the parameter. Only the bound lives here; each route says what its 404 looks like.

`offset` is bounded by the largest OFFSET both stores take (a signed 64-bit integer: beyond it asyncpg
refuses the value and SQLite's driver overflows); `limit` by a page size the API serves at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query

__all__ = [
    "MAX_ID",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "BeforeIdQuery",
    "DeliveryId",
    "EventId",
    "IncidentId",
    "Limit",
    "NotificationId",
    "Offset",
    "OptionalIncidentQuery",
    "bounded_query",
    "in_range",
    "path_id",
    "query_id",
]

MAX_ID = 2**31 - 1  # PostgreSQL INTEGER; the tighter of the two stores is the contract on both
MAX_OFFSET = 2**63 - 1  # PostgreSQL BIGINT and SQLite INTEGER, what OFFSET takes on both
MAX_LIMIT = 1000


def in_range(value: int) -> bool:
    return 1 <= value <= MAX_ID


def path_id(name: str, *, missing: Callable[[int], Exception]) -> Any:
    """A dependency reading the path parameter `name`; `missing(value)` is raised for an id out of
    range, the same exception the route raises for an id with no row. (The dependencies here are
    `async` only so that FastAPI runs them on the event loop, not in its thread pool.)"""

    async def read(value: int = Path(alias=name, description=f"1 to {MAX_ID}")) -> int:
        if not in_range(value):
            raise missing(value)
        return value

    return Depends(read)


def query_id(name: str, *, description: str) -> Any:
    """A dependency reading the optional query parameter `name`: None when absent, 400 out of range."""

    async def read(value: int | None = Query(None, alias=name, description=description)) -> int | None:
        if value is not None and not in_range(value):
            raise HTTPException(400, f"{name}: must be an id from 1 to {MAX_ID}")
        return value

    return Depends(read)


def bounded_query(name: str, *, low: int, high: int, default: int, description: str) -> Any:
    """A dependency reading the integer query parameter `name` (`default` when absent); 400 naming the
    parameter and its range outside `low` .. `high` (a value that is no integer is refused the same way,
    by the app's handler of validation errors)."""

    async def read(value: int = Query(default, alias=name, description=f"{description}, {low} to {high}")) -> int:
        if not low <= value <= high:
            raise HTTPException(400, f"{name}: must be an integer from {low} to {high}")
        return value

    return Depends(read)


def _not_found(what: str) -> Callable[[int], Exception]:
    return lambda value: HTTPException(404, f"no {what} {value}")


# The JSON API's ids; the console's, which answer with a page, are in `alertrouter.web.console.pages`.
IncidentId = Annotated[int, path_id("incident_id", missing=_not_found("incident"))]
EventId = Annotated[int, path_id("event_id", missing=_not_found("raw event"))]
DeliveryId = Annotated[int, path_id("delivery_id", missing=_not_found("delivery"))]
NotificationId = Annotated[int, path_id("delivery_id", missing=_not_found("notification"))]
BeforeIdQuery = Annotated[int | None, query_id("before_id", description="page backwards from this id")]
OptionalIncidentQuery = Annotated[int | None, query_id("incident", description="only this incident's deliveries")]
Limit = Annotated[int, bounded_query("limit", low=1, high=MAX_LIMIT, default=100, description="rows per page")]
Offset = Annotated[int, bounded_query("offset", low=0, high=MAX_OFFSET, default=0, description="rows skipped")]
