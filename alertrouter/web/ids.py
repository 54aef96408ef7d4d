"""Integer ids in paths and queries, bounded once for every route before they reach the store.

Every id column is an INTEGER: PostgreSQL's holds -2^31 .. 2^31-1 and asyncpg refuses anything beyond
(a "database error", 503), SQLite's holds 64 bits and its driver overflows past them (500). Rows are
numbered from 1, so an id outside 1 .. 2^31-1 names nothing on either store: a path id out of range
is answered exactly as an absent row is (404, with the route's own words), a query id with a 400
naming the parameter. Only the bound lives here; each route says what its 404 looks like.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Path, Query

__all__ = [
    "MAX_ID",
    "BeforeIdQuery",
    "DeliveryId",
    "EventId",
    "IncidentId",
    "NotificationId",
    "OptionalIncidentQuery",
    "in_range",
    "path_id",
    "query_id",
]

MAX_ID = 2**31 - 1  # PostgreSQL INTEGER; the tighter of the two stores is the contract on both


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


def _not_found(what: str) -> Callable[[int], Exception]:
    return lambda value: HTTPException(404, f"no {what} {value}")


# The JSON API's ids; the console's, which answer with a page, are in `alertrouter.web.console.pages`.
IncidentId = Annotated[int, path_id("incident_id", missing=_not_found("incident"))]
EventId = Annotated[int, path_id("event_id", missing=_not_found("raw event"))]
DeliveryId = Annotated[int, path_id("delivery_id", missing=_not_found("delivery"))]
NotificationId = Annotated[int, path_id("delivery_id", missing=_not_found("notification"))]
BeforeIdQuery = Annotated[int | None, query_id("before_id", description="page backwards from this id")]
OptionalIncidentQuery = Annotated[int | None, query_id("incident", description="only this incident's deliveries")]
