"""What the engine adds to a message from the GPUs' histories, as it writes a pass's messages: which of its
GPUs the `rma:` rules make an RMA candidate ("RMA candidate: GPU 3 (GPU-5f1c…): Xid 48 twice in 11 days"),
and the triage's verdict when a fault repeats on its GPU over time ("the same Xid 48 5 times in 24 h on this
GPU: hardware") — a repetition the live alerts cannot show, as dcgm-exporter keeps one series per GPU.

Read in the pass's transaction: ingest recorded the GPU events of the alerts in the transaction that stored
them, so the alert a message is about is in its GPU's history already. Only the messages of the pass pay, one
read for all their GPUs; a message whose alerts carry no `UUID` pays nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession

from alertrouter.gpu.alerts import xid_alert
from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.identity import identity_of
from alertrouter.gpu.report import gpu_events
from alertrouter.gpu.rma import RmaRule, RmaVerdict, evaluate
from alertrouter.gpu.triage import TriageRules, Verdict, triage
from alertrouter.message.facts import NodeFacts
from alertrouter.message.gpu_triage import GpuTriageFacts
from alertrouter.message.rma import RmaNote
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.pipeline.folding import triage_facts
from alertrouter.pipeline.types import Intent
from alertrouter.store import gpus as gpu_store

__all__ = ["with_gpu_history"]


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


def repeated_on_gpu(
    message: MessageSnapshot, history: Mapping[str, Sequence[GpuEvent]], rules: TriageRules
) -> GpuTriageFacts | None:
    """A firing node message's triage with its GPUs' histories, when that makes the verdict HARDWARE (a fault
    repeating on its GPU) and the message says no verdict yet; else None. Each alert counts from its own
    episode's start as its GPU's history has it (the latest event of its Xid), else the message's start."""
    summary = message.summary
    if message.resolved or not isinstance(summary, NodeFacts) or message.started_at is None:
        return None
    if summary.triage is not None and summary.triage.reason is not None:
        return None
    alerts, labels = [], {}
    for item in message.alerts:
        if not item.firing or (gpu := identity_of(item.labels)) is None:
            continue
        found = xid_alert(item.fingerprint, item.labels, message.started_at, "")
        if found is None:
            continue
        starts = [e.at for e in history.get(gpu.uuid, ()) if e.xid == found.xid]
        alerts.append(replace(found, starts_at=max(starts)) if starts else found)
        labels[item.fingerprint] = item.labels
    result = triage(alerts, history, rules)
    if result.verdict is not Verdict.HARDWARE:
        return None
    own = [r for r in result.roots if not rules.is_consequence(r.info) and r.info.kind != "informational"]
    facts = triage_facts(own, result, labels) if own else None
    if facts is None or summary.triage is None:
        return facts
    return replace(summary.triage, verdict=facts.verdict, reason=facts.reason)


async def with_gpu_history(
    session: AsyncSession, intents: list[Intent], rma: Sequence[RmaRule], repeats: TriageRules | None
) -> list[Intent]:
    """The intents, each message saying which of its GPUs are RMA candidates and, with `repeats` (the
    triage's rules; None: not asked), a fault that repeats on its GPU (none: unchanged)."""
    if not intents or (not rma and repeats is None):
        return intents
    wanted = {n: gpus for n, intent in enumerate(intents) if (gpus := _gpus(intent.message))}
    if not wanted:
        return intents
    rows = await gpu_store.events_of(session, {uuid for gpus in wanted.values() for uuid in gpus})
    history = {uuid: gpu_events(found) for uuid, found in rows.items()}
    notes = {uuid: note for uuid, events in history.items() if rma and (note := _note(uuid, evaluate(events, rma)))}
    out = list(intents)
    for n, gpus in wanted.items():
        message = intents[n].message
        found = tuple(replace(notes[uuid], slot=slot) for uuid, slot in gpus.items() if uuid in notes)
        told = repeated_on_gpu(message, history, repeats) if repeats is not None else None
        if found or told is not None:
            summary = message.summary
            if told is not None and isinstance(summary, NodeFacts):
                summary = replace(summary, triage=told)
            out[n] = replace(intents[n], message=replace(message, rma=found or message.rma, summary=summary))
    return out
