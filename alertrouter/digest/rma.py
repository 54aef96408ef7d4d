"""The week's RMA candidates: the GPUs the `rma:` rules make candidates from their own history (by UUID, as
`GET /api/v1/gpus?rma=true` and `alertrouter gpus --rma` judge them), evaluated as of the week's end.

Listed: a GPU that one rule makes a candidate by the week's end with evidence that includes an event of
the week (a new candidate, or one that failed again). Events after the week do not count, so the digest
of a past week says what was known at its end. A GPU whose evidence is all older is left out: the history
is never pruned, so a candidate would otherwise come back every week, even after its RMA; the API and
the CLI list every candidate. Each rule is tried on its own, in the rules' order, so an old hit of one
rule does not hide this week's hit of another.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from alertrouter.digest.types import GpuEventFact, GpuHistory, RmaCandidate
from alertrouter.gpu.events import GpuEvent
from alertrouter.gpu.rma import DEFAULT_RULES, RmaRule, evaluate
from alertrouter.store.digest import GpuMatch

__all__ = ["gpu_match", "rma_candidates"]


def gpu_match(rules: Sequence[RmaRule]) -> GpuMatch:
    """Which GPUs' history the rules need read: those with an event a rule names in the week, back as far
    as the longest window."""
    return GpuMatch(
        xids=frozenset(x for r in rules for x in r.xids),
        alertnames=frozenset(n for r in rules for n in r.alertnames),
        lookback=max((r.window for r in rules), default=GpuMatch().lookback),
    )


def _key(e: GpuEventFact) -> tuple[datetime, int, str]:
    return (e.at, e.xid or 0, e.alertname)


def _candidate(gpu: GpuHistory, rules: Sequence[RmaRule], *, start: datetime, end: datetime) -> RmaCandidate | None:
    """The first rule whose latest hit (by the week's end) includes an event of the week, or None."""
    facts = sorted((e for e in gpu.events if e.at < end), key=_key)
    events = [GpuEvent(alertname=e.alertname, at=e.at, xid=e.xid) for e in facts]
    for rule in rules:
        verdict = evaluate(events, (rule,))
        if not verdict.candidate or not any(start <= e.at < end for e in verdict.evidence):
            continue
        # The evidence back as stored, with where each event saw the GPU (equal events are in or out together).
        chosen = set(verdict.evidence)
        evidence = tuple(f for f, e in zip(facts, events, strict=True) if e in chosen)
        last = evidence[-1]
        xids = sorted({e.xid for e in evidence if e.xid is not None and e.xid in rule.xids})
        names = sorted({e.alertname for e in evidence if e.xid is None or e.xid not in rule.xids})
        return RmaCandidate(
            uuid=gpu.uuid,
            serial=gpu.serial,
            model=gpu.model,
            node=last.node,
            slot=last.slot,
            rule=rule.name,
            window=rule.window,
            evidence=evidence,
            xids=tuple(xids),
            alertnames=tuple(names),
        )
    return None


def _order(slot: str | None) -> tuple[int, str]:
    value = slot or ""
    return (int(value), "") if value.isascii() and value.isdigit() and len(value) < 9 else (1 << 30, value)


def rma_candidates(
    gpus: Iterable[GpuHistory], rules: Sequence[RmaRule] = DEFAULT_RULES, *, start: datetime, end: datetime
) -> list[RmaCandidate]:
    """The candidates to list, the latest evidence first, then by node, slot and UUID."""
    found = [c for gpu in gpus if (c := _candidate(gpu, rules, start=start, end=end)) is not None]
    return sorted(found, key=lambda c: (-c.evidence[-1].at.timestamp(), c.node or "", _order(c.slot), c.uuid))
