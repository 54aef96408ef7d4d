"""What the engine adds to a message from the GPUs' histories: which of its GPUs the `rma:` rules make an RMA
candidate, and why, so the page says it ("RMA candidate: GPU 3 (GPU-5f1c…): Xid 48 twice in 11 days").

Read as the pass writes its messages, in its transaction: ingest recorded the GPU events of the alerts in the
transaction that stored them, so the alert a message is about is in its GPU's history already. Only the
messages of the pass pay, one read for all their GPUs; a message whose alerts carry no `UUID` pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.gpu.identity import identity_of
from alertrouter.gpu.report import gpu_events
from alertrouter.gpu.rma import RmaRule, RmaVerdict, evaluate
from alertrouter.message.rma import RmaNote
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.types import Intent
from alertrouter.store import gpus as gpu_store

__all__ = ["with_rma"]


def _gpus(message: MessageSnapshot) -> dict[str, str]:
    """uuid -> slot of the GPUs a message's alerts name, in the order they are listed."""
    found: dict[str, str] = {}
    for alert in message.alerts:
        if (gpu := identity_of(alert.labels)) is not None:
            found.setdefault(gpu.uuid, gpu.slot or "")
    return found


def _note(uuid: str, verdict: RmaVerdict) -> RmaNote | None:
    evidence = verdict.evidence
    if not verdict.candidate or not evidence:
        return None
    return RmaNote(
        uuid=uuid,
        slot="",
        rule=verdict.rule or "",
        count=len(evidence),
        first=evidence[0].at,
        last=evidence[-1].at,
        xids=tuple(sorted({e.xid for e in evidence if e.xid is not None})),
        alertnames=tuple(sorted({e.alertname for e in evidence if e.xid is None})),
    )


async def with_rma(session: AsyncSession, intents: list[Intent], rules: Sequence[RmaRule]) -> list[Intent]:
    """The intents, each message saying which of its GPUs are RMA candidates (none: unchanged)."""
    if not rules or not intents:
        return intents
    wanted = {n: gpus for n, intent in enumerate(intents) if (gpus := _gpus(intent.message))}
    if not wanted:
        return intents
    history = await gpu_store.events_of(session, {uuid for gpus in wanted.values() for uuid in gpus})
    notes = {uuid: note for uuid, rows in history.items() if (note := _note(uuid, evaluate(gpu_events(rows), rules)))}
    out = list(intents)
    for n, gpus in wanted.items():
        found = tuple(replace(notes[uuid], slot=slot) for uuid, slot in gpus.items() if uuid in notes)
        if found:
            out[n] = replace(intents[n], message=replace(intents[n].message, rma=found))
    return out
