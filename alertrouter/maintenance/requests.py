"""A request to start maintenance, checked as the CLI, the API and the console take it: the nodes,
how long, why. Each refusal names the field to fix (`RequestError`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from alertrouter.durations import parse_duration
from alertrouter.model import NAME_MAX

__all__ = [
    "MAX_NODES",
    "MAX_REASON",
    "MAX_WINDOW",
    "RequestError",
    "StartRequest",
    "node_list",
    "start_request",
    "who",
]

MAX_WINDOW = timedelta(days=90)  # as a silence's longest
MAX_REASON = 500  # characters: "RMA ticket 4711, GPU 3 fell off the bus" fits many times
MAX_NODES = 1000  # nodes per request: a rack row, not a typo of a loop


class RequestError(ValueError):
    """Bad input from a person: `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True, slots=True)
class StartRequest:
    nodes: tuple[str, ...]
    starts_at: datetime
    ends_at: datetime
    reason: str
    by: str


def _text(field: str, text: str) -> None:
    """U+0000 is refused: PostgreSQL's text cannot hold it, and SQLite would keep what PostgreSQL refuses."""
    if "\x00" in text:
        raise RequestError(field, "contains U+0000 (NUL), which is not allowed")


def who(by: str) -> str:
    """Who starts or ends a window, as the store keeps it (a name's width)."""
    _text("by", by)
    return by[:NAME_MAX]


def node_list(nodes: Sequence[str]) -> tuple[str, ...]:
    """Names as given, blanks dropped, each once, in the order given; refused when none is left."""
    out: dict[str, None] = {}
    for raw in nodes:
        name = raw.strip()
        if not name:
            continue
        _text("nodes", name)
        if len(name) > NAME_MAX:
            raise RequestError("nodes", f"a node name is at most {NAME_MAX} characters: {name[:40]!r}...")
        out[name] = None
    if not out:
        raise RequestError("nodes", "give at least one node")
    if len(out) > MAX_NODES:
        raise RequestError("nodes", f"at most {MAX_NODES} nodes at once")
    return tuple(out)


def start_request(nodes: Sequence[str], duration: str, reason: str, by: str, *, now: datetime) -> StartRequest:
    """Maintenance of `nodes` from `now` for `duration` (`4h`, `2d`), at most `MAX_WINDOW`."""
    names = node_list(nodes)
    try:
        length = parse_duration(duration)
    except ValueError as exc:
        raise RequestError("duration", str(exc)) from None
    if length <= timedelta(0):
        raise RequestError("duration", "must be positive, e.g. 4h")
    if length > MAX_WINDOW:
        raise RequestError("duration", f"at most {MAX_WINDOW.days} days")
    if len(reason) > MAX_REASON:
        raise RequestError("reason", f"at most {MAX_REASON} characters (got {len(reason)})")
    _text("reason", reason)
    return StartRequest(names, now, now + length, reason.strip(), who(by))
