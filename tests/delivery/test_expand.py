"""`notification_of`: which delivery rows get acknowledge/silence links, and what the links say."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from alertrouter.auth.links import ACTION_PATH, LINK_PURPOSE, Action, read_action
from alertrouter.auth.signing import Signer
from alertrouter.delivery.expand import ActionLinks, notification_of

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
SIGNER = Signer("expand-test-link-key-0001", LINK_PURPOSE)
ACTIONS = ActionLinks(SIGNER, ttl=timedelta(hours=2), silence=timedelta(hours=1))
BASE = "https://ar.example"


def row(kind: str = "firing", incident_id: int | None = 42) -> Any:
    return SimpleNamespace(
        id=7,
        kind=kind,
        receiver="oncall",
        severity="critical",
        incident_id=incident_id,
        message={"items": [{"headline": "h"}], "mentions": {}},
        created_at=NOW - timedelta(minutes=5),
    )


@pytest.mark.parametrize(
    ("kind", "incident_id", "base", "actions", "linked"),
    [
        ("firing", 42, BASE, ACTIONS, True),
        ("update", 42, BASE, ACTIONS, True),
        ("cluster", 42, BASE, ACTIONS, True),
        ("resolved", 42, BASE, ACTIONS, False),
        ("coalesced", None, BASE, ACTIONS, False),
        ("firing", None, BASE, ACTIONS, False),  # no incident to act on
        ("firing", 42, "", ACTIONS, False),  # no external URL: a link could not be opened
        ("firing", 42, BASE, None, False),  # no signers
    ],
)
def test_which_messages_get_links(
    kind: str, incident_id: int | None, base: str, actions: ActionLinks | None, linked: bool
) -> None:
    n = notification_of(row(kind, incident_id), (), base_url=base, now=NOW, actions=actions)
    assert (n.ack_link is not None, n.silence_link is not None, n.silence_for is not None) == (linked,) * 3


def test_links_name_the_incident_and_expire_ttl_after_now() -> None:
    n = notification_of(row(), (), base_url=BASE, now=NOW, actions=ACTIONS)
    assert n.silence_for == timedelta(hours=1)
    for link, action in ((n.ack_link, Action.ACK), (n.silence_link, Action.SILENCE)):
        assert link is not None
        assert link.startswith(BASE + ACTION_PATH)
        token = read_action(SIGNER, link.removeprefix(BASE + ACTION_PATH), now=NOW)
        assert (token.action, token.incident_id, token.expires_at) == (action, 42, NOW + timedelta(hours=2))


def test_each_call_makes_fresh_nonces() -> None:
    links = [notification_of(row(), (), base_url=BASE, now=NOW, actions=ACTIONS).ack_link for _ in range(3)]
    assert len(set(links)) == 3
