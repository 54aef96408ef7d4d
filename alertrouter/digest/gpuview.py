"""The digest's section "GPU faults and RMA candidates" as the templates show it, worded in the digest's
language: per node the mean time between GPU faults (`digest.gpufaults`), the RMA candidates with the rule
met, why and their evidence (`digest.rma`), and the footnote that defines both.

How many times in how long a span is worded with the catalogue's entries of `message.rma` (the same words
a message about an RMA candidate says), with XID written as the digest writes it.
"""

from __future__ import annotations

from gettext import NullTranslations
from typing import Any
from zoneinfo import ZoneInfo

from alertrouter.digest.types import DigestStats, GpuEventFact, RmaCandidate
from alertrouter.digest.words import NONE, time_label
from alertrouter.gpu.xid import lookup, meaning_text
from alertrouter.message.rma import evidence_times
from alertrouter.render.context import LABEL_CAP, clean

__all__ = ["RMA_TOP", "gpu_sections", "rma_reason"]

RMA_TOP = 25  # candidates listed; the rest are counted (the API and `alertrouter gpus --rma` list them all)


def _name(value: str | None) -> str:
    return clean(value or "", LABEL_CAP)


def _data(tr: NullTranslations, value: str | None) -> str:
    """A label value cleaned and capped; a missing one as "(none)" in `tr`'s language."""
    return tr.gettext("(none)") if not value or value == NONE else _name(value)


def rma_reason(tr: NullTranslations, c: RmaCandidate) -> str:
    """`XID 48 twice in 11 days (rule dbe-repeated)` / `11 天内 XID 48 共 2 次（规则 dbe-repeated）`."""
    what = " / ".join([f"XID {x}" for x in c.xids] + [_name(n) for n in c.alertnames]) or _name(c.rule)
    times = evidence_times(tr, what, len(c.evidence), c.evidence[0].at, c.evidence[-1].at)
    return tr.gettext("%(times)s (rule %(rule)s)") % {"times": times, "rule": _name(c.rule)}


def _evidence(tr: NullTranslations, e: GpuEventFact, tz: ZoneInfo, language: str) -> dict[str, Any]:
    """One event: its local time, its XID and NVIDIA's meaning (or the alert's name), where it was seen."""
    meaning = ""
    if e.xid is not None:
        meaning = meaning_text(lookup(e.xid), language) or tr.gettext("unknown XID")
    return {
        "at": time_label(e.at.astimezone(tz), language),
        "code": e.xid,
        "meaning": meaning,
        "alertname": _name(e.alertname),
        "node": _data(tr, e.node),
        "gpu": _name(e.slot) or "—",
    }


def _candidate(tr: NullTranslations, c: RmaCandidate, tz: ZoneInfo, language: str) -> dict[str, Any]:
    identity = [_name(c.model)] if c.model else []
    identity += [tr.gettext("serial %(serial)s") % {"serial": _name(c.serial)}] if c.serial else []
    return {
        "uuid": _name(c.uuid),
        "node": _data(tr, c.node),
        "gpu": _name(c.slot) or "—",
        "rule": _name(c.rule),
        "reason": rma_reason(tr, c),
        "identity": tr.gettext(", ").join(identity),
        "evidence": [_evidence(tr, e, tz, language) for e in c.evidence],
    }


def gpu_sections(stats: DigestStats, tr: NullTranslations, tz: ZoneInfo, language: str) -> dict[str, Any]:
    """The templates' context of the section."""
    return {
        "gpu_faults": [
            {
                "node": _data(tr, n.node),
                "faults": n.faults,
                "gpus": _name(", ".join(n.gpus)) or "—",
                "xids": ", ".join(str(c) for c in n.codes),
                "mtbf": tr.gettext("%(hours)s h") % {"hours": f"{n.mtbf.total_seconds() / 3600:,.1f}"},
            }
            for n in stats.gpu_faults
        ],
        "rma": [_candidate(tr, c, tz, language) for c in stats.rma[:RMA_TOP]],
        "rma_more": max(0, len(stats.rma) - RMA_TOP),
        "gpu_footnote": tr.gettext(
            "A GPU fault is an alert naming an XID (label xid or err_code) that began firing in the week. "
            "Mean time between faults: the period's %(hours)s hours divided by the node's faults."
        )
        % {"hours": stats.hours},
        "rma_footnote": tr.gettext(
            "RMA candidate: a GPU, by its UUID wherever it was seen, that one of the RMA rules makes a "
            "candidate by the end of the week, as the GPU API and the command line judge it, and whose "
            "evidence includes an event of this week: a new candidate, or one that failed again. Events "
            "after the week do not count. A candidate whose evidence is all older is not listed again: "
            "the history is kept, so it would come back every week, even after its RMA."
        ),
    }
