"""What ingest hands on: a validated payload (`IngestBatch`) and what storing it did (`IngestResult`)."""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import orjson

from alertrouter.transitions import IncomingAlert, Transition

__all__ = ["IngestBatch", "IngestResult", "body_digest", "payload_digest"]


def payload_digest(source: str, identity: Any) -> str:
    """What identifies a payload in the raw log: sha256 of its source and the canonical JSON of `identity`.
    Raises TypeError for data nested deeper than orjson serialises."""
    return hashlib.sha256(source.encode() + b"\n" + orjson.dumps(identity, option=orjson.OPT_SORT_KEYS)).hexdigest()


def body_digest(body: bytes) -> bytes:
    """sha256 of a webhook's exact bytes: how `Ingestor.repeat_body` recognises a byte-identical re-send,
    computed once per request (for that look-up, then kept by `parse_webhook` in `IngestBatch.body_digest`)."""
    return hashlib.sha256(body).digest()


@dataclass(frozen=True, slots=True)
class IngestBatch:
    """A validated payload from either ingest endpoint."""

    source: str  # "webhook" or "api_v2"
    body: str
    alerts: list[IncomingAlert]
    receiver: str | None = None
    group_key: str | None = None
    status: str | None = None
    external_url: str | None = None
    truncated_alerts: int = 0
    rejected_alerts: int = 0
    # sha256 of the exact request bytes, for a webhook whose every alert was accepted: a byte-identical
    # re-send of it, once committed, is answered without being parsed again (`Ingestor.repeat_body`).
    body_digest: bytes | None = None
    # The payload's `digest`, or None until it is first needed: then `payload_digest(source, identity)`,
    # where an `identity` of None is the body itself (an API v2 push decoded straight from its bytes).
    # Most API v2 pushes only confirm what is stored and are never logged (computed per alert, so kept cheap).
    known_digest: str | None = None
    identity: Any = None

    @property
    def digest(self) -> str:
        if (digest := self.known_digest) is None:
            digest = payload_digest(self.source, orjson.loads(self.body) if self.identity is None else self.identity)
            object.__setattr__(self, "known_digest", digest)  # a cache: the batch means the same
        return digest

    @property
    def always_logged(self) -> bool:
        """Webhooks are logged once per distinct payload; API v2 pushes only when they change something,
        because Prometheus re-sends every firing alert each minute with a new `endsAt`."""
        return self.source == "webhook"


@dataclass(slots=True)
class IngestResult:
    transitions: Counter[Transition] = field(default_factory=Counter)
    raw_event_id: int | None = None
    repeat: bool = False  # the exact payload was already committed by this process: nothing to do

    @property
    def written(self) -> int:
        return sum(n for kind, n in self.transitions.items() if kind.writes)
