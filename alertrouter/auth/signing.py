"""Signed, expiring tokens: the acknowledge/silence links in messages and the console's session cookie.

A token is `base64url(json payload) "." base64url(HMAC-SHA256)`. Each use (`purpose`) signs with its
own key derived from the secret, so a session cookie can never pass as an action link or the other
way round. The payload always carries `exp` (Unix seconds); checking it is part of `verify`, so an
expired token is refused even with a valid signature. Single use is the caller's business (the link
actions record the token's `nonce`; see `alertrouter.store.actions`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from collections.abc import Mapping
from datetime import datetime
from typing import Any

__all__ = ["Signer", "TokenError", "new_secret"]


class TokenError(ValueError):
    """A token that is malformed, forged (bad signature) or expired; `reason` is safe to show."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def _b64encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class Signer:
    def __init__(self, secret: str | bytes, purpose: str) -> None:
        raw = secret.encode() if isinstance(secret, str) else secret
        if len(raw) < 16:
            raise ValueError("the signing secret must be at least 16 bytes")
        self._key = hmac.new(raw, b"alertrouter:" + purpose.encode(), hashlib.sha256).digest()

    def _mac(self, body: str) -> str:
        return _b64encode(hmac.new(self._key, body.encode("ascii"), hashlib.sha256).digest())

    def sign(self, payload: Mapping[str, Any], *, expires: datetime) -> str:
        """A token carrying `payload` plus `exp`; `payload` must be JSON-serialisable."""
        data = {**payload, "exp": int(expires.timestamp())}
        body = _b64encode(json.dumps(data, separators=(",", ":"), sort_keys=True).encode())
        return f"{body}.{self._mac(body)}"

    def verify(self, token: str, *, now: datetime) -> dict[str, Any]:
        """The payload of a genuine, unexpired token; raises `TokenError` otherwise. The signature is
        checked (in constant time) before anything in the payload is looked at."""
        body, sep, mac = token.partition(".")
        if not sep or not body or not mac or not body.isascii() or not mac.isascii():
            raise TokenError("malformed link")
        if not hmac.compare_digest(mac, self._mac(body)):
            raise TokenError("invalid signature")
        try:
            data = json.loads(_b64decode(body))
        except (binascii.Error, ValueError):
            raise TokenError("malformed link") from None
        if not isinstance(data, dict) or not isinstance(data.get("exp"), int):
            raise TokenError("malformed link")
        if now.timestamp() >= data["exp"]:
            raise TokenError("link expired")
        return data
