"""The acknowledge and silence links in messages: what they carry, how they are made and read.

A link is `{external_url}/a/{token}`. The token is signed (`alertrouter.auth.signing`, purpose "link"),
names the action and the incident by id, expires after `ALERTROUTER_LINK_TTL`, and carries a random
nonce that the action records when it is used, so a link works once. Opening a link (GET) only shows
what it would do; the action happens on the confirmation (POST), because chat apps fetch links to
preview them.
"""

from __future__ import annotations

import enum
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from alertrouter.auth.signing import Signer, TokenError

__all__ = ["ACTION_PATH", "LINK_PURPOSE", "SESSION_PURPOSE", "Action", "ActionToken", "action_link", "read_action"]

ACTION_PATH = "/a/"
LINK_PURPOSE = "link"
SESSION_PURPOSE = "session"


class Action(enum.StrEnum):
    ACK = "ack"
    SILENCE = "silence"


@dataclass(frozen=True, slots=True)
class ActionToken:
    action: Action
    incident_id: int
    nonce: str
    expires_at: datetime


def action_link(
    signer: Signer, base_url: str, action: Action, incident_id: int, *, now: datetime, ttl: timedelta
) -> str:
    token = signer.sign(
        {"a": action.value, "i": incident_id, "n": secrets.token_urlsafe(12)},
        expires=now + ttl,
    )
    return f"{base_url.rstrip('/')}{ACTION_PATH}{token}"


def read_action(signer: Signer, token: str, *, now: datetime) -> ActionToken:
    """The action of a genuine, unexpired link; raises `TokenError` (forged, expired, malformed)."""
    data = signer.verify(token, now=now)
    try:
        action = Action(data["a"])
        incident_id = data["i"]
        nonce = data["n"]
    except (KeyError, ValueError):
        raise TokenError("malformed link") from None
    if not isinstance(incident_id, int) or not isinstance(nonce, str) or not nonce:
        raise TokenError("malformed link")
    return ActionToken(action, incident_id, nonce, datetime.fromtimestamp(data["exp"], UTC))
