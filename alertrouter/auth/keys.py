"""The signing keys of a running service: from ALERTROUTER_SECRET_KEY, or generated once and kept in the
store so every replica signs and checks links and sessions with the same key."""

from __future__ import annotations

from dataclasses import dataclass

from alertrouter.auth.links import LINK_PURPOSE, SESSION_PURPOSE
from alertrouter.auth.signing import Signer, new_secret
from alertrouter.model import utcnow
from alertrouter.store import Database
from alertrouter.store.actions import get_or_create_secret

__all__ = ["Signers", "load_signers"]

SECRET_NAME = "signing-key"  # noqa: S105 - the name of the stored secret, not a secret


@dataclass(frozen=True, slots=True)
class Signers:
    link: Signer  # acknowledge/silence links in messages
    session: Signer  # console login cookies


async def load_signers(db: Database, secret_key: str | None) -> Signers:
    """Signers keyed by `secret_key` (ALERTROUTER_SECRET_KEY), or by the key kept in the store."""
    if secret_key is not None:
        secret = secret_key
    else:
        async with db.write() as session:
            secret = await get_or_create_secret(session, name=SECRET_NAME, make=new_secret, now=utcnow())
            await session.commit()
    return Signers(link=Signer(secret, LINK_PURPOSE), session=Signer(secret, SESSION_PURPOSE))
