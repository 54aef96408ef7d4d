"""Values that made the context builders raise (issue 18, "rendering is total"), found by the property
tests of `test_total.py` and pinned here: digits `int()` refuses, a start time the zone cannot show,
a lone surrogate."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification, utf8_len
from alertrouter.render.templates import Templates

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
NodeFactory = Callable[..., dict[str, Any]]
NoteFactory = Callable[..., Notification]
FORMATS = [("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt"), ("email", "html"), ("sms", "txt")]


@pytest.mark.parametrize("unit", ["²", "¹", "①"])
@pytest.mark.parametrize(("channel", "fmt"), FORMATS)
def test_unit_labels_that_are_not_ascii_indexes(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str, fmt: str, unit: str
) -> None:
    """`str.isdigit()` is true for these, and `int()` refuses them. No grid is drawn, and the alerts are
    still listed."""
    n = make_notification(MessageKind.FIRING, [make_node(units=(unit, "3"), total=8)])
    out = templates.render(channel, fmt, n)
    assert "■" not in out
    assert unit in out or channel == "sms"


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "UTC", "America/Los_Angeles"])
def test_a_start_time_at_the_end_of_time(make_node: NodeFactory, make_notification: NoteFactory, zone: str) -> None:
    """An alert may say it started at 9999-12-31T23:00Z; in UTC+8 that is past year 9999."""
    item = make_node()
    item["opened_at"] = "9999-12-31T23:00:00+00:00"
    for alert in item["alerts"]:
        alert["starts_at"] = "9999-12-31T23:59:00Z"
    n = make_notification(MessageKind.FIRING, [item])
    n = Notification(n.kind, n.receiver, n.severity, n.items, n.link, created_at=datetime(9999, 12, 31, 23, tzinfo=UTC))
    out = Templates(builtin_dir=TEMPLATES_DIR, timezone=zone).render("email", "txt", n)
    assert "12-31 " in out


def test_a_lone_surrogate(templates: Templates, make_node: NodeFactory, make_notification: NoteFactory) -> None:
    """Not valid UTF-8 at all (the webhook's JSON parser refuses it, but a snapshot is only a dict)."""
    n = make_notification(MessageKind.FIRING, [make_node(node="gpu\ud800node", headline="h\udfff")])
    for channel, fmt in FORMATS:
        out = templates.render(channel, fmt, n, limit_bytes=2048)
        assert utf8_len(out) <= 2048
        assert "gpu node" in out or channel == "sms"  # the SMS line does not name the node
    assert templates.title(n) == "[CRITICAL] h"
