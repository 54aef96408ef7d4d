"""Bearer and Basic credentials, as Alertmanager's `http_config` sends them, compared in constant time."""

from __future__ import annotations

import base64
import binascii
import hmac

__all__ = ["Authenticator"]


class Authenticator:
    """`bearer`: the token Alertmanager sends as `Authorization: Bearer`; `basic`: (user, password).
    Neither: every request is let in (the loopback default)."""

    def __init__(self, *, bearer: str | None = None, basic: tuple[str, str] | None = None) -> None:
        self._bearer = bearer.encode() if bearer is not None else None
        self._basic = (basic[0].encode(), basic[1].encode()) if basic is not None else None

    @property
    def enabled(self) -> bool:
        return self._bearer is not None or self._basic is not None

    @property
    def challenge(self) -> str:
        schemes = []
        if self._bearer is not None:
            schemes.append('Bearer realm="alertrouter"')
        if self._basic is not None:
            schemes.append('Basic realm="alertrouter"')
        return ", ".join(schemes)

    def check(self, authorization: str | None) -> bool:
        """True when the header carries a configured credential (or none is configured)."""
        if not self.enabled:
            return True
        if not authorization:
            return False
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        scheme = scheme.lower()
        if scheme == "bearer" and self._bearer is not None:
            return hmac.compare_digest(value.encode(), self._bearer)
        if scheme == "basic" and self._basic is not None:
            try:
                decoded = base64.b64decode(value, validate=True)
            except (binascii.Error, ValueError):
                return False
            user, sep, password = decoded.partition(b":")
            # Evaluate both comparisons so timing does not reveal which half was wrong.
            ok_user = hmac.compare_digest(user, self._basic[0])
            ok_password = hmac.compare_digest(password, self._basic[1])
            return bool(sep) and ok_user and ok_password
        return False
