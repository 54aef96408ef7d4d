"""GPU alert payloads as Alertmanager posts them, kept as data in tests/fixtures/gpu/*.json: each file is one
story (an XID 79 and its XID 45 followers, an XID 48 eleven days apart, the dcgm-exporter 4.x and Kubernetes
label shapes, hostile label sets) told as the webhook posts Alertmanager makes, in order.

A file holds `about` (what happens, and which exporter version and scrape shape the labels are from),
`problems` (the codes tests/support/dcgm.py's checks must find: empty for a real shape) and `posts`, each
`{"at": when Alertmanager posted it, "payload": the webhook body}`. The times are fixed; `shifted(now)` moves
every one of them (post times, startsAt, endsAt; Go's zero time stays) so that the last post is at `now`,
for tests that send a story to a running `serve` whose clock is the wall clock.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES_DIR", "XID_ACTION_ROUTES", "GpuFixture", "Post", "load", "names"]

FIXTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "gpu"
GO_ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt of a firing alert


@dataclass(frozen=True, slots=True)
class Post:
    """One webhook call: when Alertmanager made it, and the JSON body it sent."""

    at: datetime
    payload: dict[str, Any]

    def body(self) -> bytes:
        return json.dumps(self.payload, ensure_ascii=False).encode()

    def alerts(self) -> list[dict[str, Any]]:
        alerts: list[dict[str, Any]] = self.payload["alerts"]
        return alerts


@dataclass(frozen=True, slots=True)
class GpuFixture:
    name: str
    about: str
    problems: tuple[str, ...]
    posts: tuple[Post, ...]

    def alerts(self) -> Iterator[dict[str, Any]]:
        """Every alert of every post, in the order they were posted."""
        for post in self.posts:
            yield from post.alerts()

    def labels(self) -> list[Mapping[str, str]]:
        return [alert["labels"] for alert in self.alerts()]

    def shifted(self, now: datetime) -> GpuFixture:
        """The same story with every time moved by one offset, so that the last post is at `now`."""
        offset = now - self.posts[-1].at
        return GpuFixture(self.name, self.about, self.problems, tuple(_shift(post, offset) for post in self.posts))


def names() -> list[str]:
    return sorted(path.stem for path in FIXTURES_DIR.glob("*.json"))


def load(name: str) -> GpuFixture:
    raw = json.loads((FIXTURES_DIR / f"{name}.json").read_text(encoding="utf-8"))
    posts = tuple(Post(_time(post["at"]), post["payload"]) for post in raw["posts"])
    return GpuFixture(name, " ".join(raw["about"]), tuple(raw["problems"]), posts)


def _time(text: str) -> datetime:
    """RFC 3339 in UTC as Alertmanager writes it; its nanoseconds are cut to microseconds."""
    head, _, fraction = text.removesuffix("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(fraction or '0')[:6]:0<6}").replace(tzinfo=UTC)


def _moved(text: str, offset: timedelta) -> str:
    if text == GO_ZERO_TIME:
        return text
    return (_time(text) + offset).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _shift(post: Post, offset: timedelta) -> Post:
    payload = copy.deepcopy(post.payload)
    for alert in payload["alerts"]:
        alert["startsAt"] = _moved(alert["startsAt"], offset)
        alert["endsAt"] = _moved(alert["endsAt"], offset)
    return Post(post.at + offset, payload)


# Routes by the derived `xid_action` label, as rules/routes.yml's commented example has them: application
# faults to the workload's owner, hardware faults to infrastructure.
XID_ACTION_ROUTES = """
route:
  receiver: everything-else
  group_wait: 30s
  group_interval: 5m
  repeat_interval: 4h
  routes:
    - {matchers: ['xid_action="RESTART_APP"'], receiver: workload-owner}
    - {matchers: ['xid_action=~"RESET_GPU|RESTART_BM|WORKFLOW_XID_48"'], receiver: infrastructure}
receivers: [{name: everything-else}, {name: workload-owner}, {name: infrastructure}]
"""
