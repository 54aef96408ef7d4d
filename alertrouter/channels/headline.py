"""A message's headline, the alert name kept whole: the node (and a storm's scope values) shortened instead.

The node is a label value, as long as an exporter made it (`Hostname`, `node`: 4,096 characters pass
the ingest); the headline starts with it (`gpu-node-07: GPUHighTemp on 6/8 GPUs`, `north 区 40 个节点
GPUXidError`), so a title or an SMS variable cut at its end would lose the alert name. Every headline a
message shows is made here: with the node cut to `NODE_CAP` characters, and, where the headline must fit
a size (a title, an SMS or voice variable), the node shortened further, then the GPU count dropped, then
the node, before anything of the alert name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from gettext import NullTranslations
from typing import Any

from alertrouter.i18n import headline, member_line, node_headline
from alertrouter.model import HEARTBEAT_ALERTNAME, IncidentKind, MessageSnapshot

__all__ = ["MIN_NODE", "NODE_CAP", "fitted_headline", "message_headline", "short_member_line", "shorten"]

NODE_CAP = 64  # characters of a node (or of a storm's region, rack, cluster) in any headline
MIN_NODE = 6  # characters of a node kept, at least, before a headline that must fit drops it
ELLIPSIS = "…"


def shorten(value: str, keep: int, ellipsis: str = ELLIPSIS) -> str:
    """`value` whole if at most `keep` characters, else its first `keep` and `ellipsis`."""
    return value if len(value) <= keep else value[:keep].rstrip() + ellipsis


def _capped(snapshot: MessageSnapshot, keep: int, ellipsis: str) -> MessageSnapshot:
    """`snapshot` with the summary's `where` and scope values as a headline shows them."""
    summary: dict[str, Any] = dict(snapshot.summary)
    if isinstance(where := summary.get("where"), str):
        summary["where"] = shorten(where, keep, ellipsis)
    if isinstance(scope := summary.get("scope"), list):
        summary["scope"] = [
            [p[0], shorten(str(p[1]), keep, ellipsis)] if isinstance(p, list | tuple) and len(p) == 2 else p
            for p in scope
        ]
    return replace(snapshot, summary=summary)


def message_headline(tr: NullTranslations, snapshot: MessageSnapshot) -> str:
    """`i18n.headline` with the node and scope values cut to `NODE_CAP` characters. A snapshot without
    the facts (stored before they were) keeps the headline it was stored with, as `i18n.headline` does."""
    return headline(tr, _capped(snapshot, NODE_CAP, ELLIPSIS))


def short_member_line(tr: NullTranslations, member: object, alertname: str, unit_name: str) -> str | None:
    """`i18n.member_line` (a storm's member node) with its node cut to `NODE_CAP` characters."""
    if isinstance(member, Mapping) and isinstance(where := member.get("where"), str):
        member = {**member, "where": shorten(where, NODE_CAP)}
    return member_line(tr, member, alertname, unit_name)


def _largest(fits: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """The largest n in [lo, hi] with `fits(n)`, for a `fits` that holds up to some n and not beyond."""
    best = None
    while lo <= hi:
        mid = (lo + hi) // 2
        if fits(mid):
            best, lo = mid, mid + 1
        else:
            hi = mid - 1
    return best


@dataclass(frozen=True, slots=True)
class _NodeFacts:
    """What a node incident's headline is worded from (`pipeline.incident.summary_dict` stores them)."""

    where: str
    what: str
    units: int
    total: int | None
    unit_name: str

    @classmethod
    def of(cls, snapshot: MessageSnapshot) -> _NodeFacts | None:
        summary = snapshot.summary
        where, what = summary.get("where"), summary.get("alertname") or snapshot.labels.get("alertname")
        if snapshot.kind is not IncidentKind.NODE or not isinstance(where, str) or not what:
            return None
        if what == HEARTBEAT_ALERTNAME:  # worded as a blind heartbeat, not from the node
            return None
        units, total = summary.get("units"), summary.get("units_total")
        return cls(
            where,
            str(what),
            len(units) if isinstance(units, list) else 0,
            total if isinstance(total, int) and not isinstance(total, bool) else None,
            str(summary.get("unit_name") or "GPUs"),
        )

    def fitted(self, tr: NullTranslations, units: int, fits: Callable[[str], bool], ellipsis: str) -> str | None:
        """With `units` counted, the node shortened as little as fits; None if not even `MIN_NODE` does."""

        def text(keep: int) -> str:
            return node_headline(tr, shorten(self.where, keep, ellipsis), self.what, units, self.total, self.unit_name)

        hi = min(len(self.where), NODE_CAP)
        keep = _largest(lambda k: fits(text(k)), min(MIN_NODE, hi), hi)
        return None if keep is None else text(keep)


def fitted_headline(
    tr: NullTranslations, snapshot: MessageSnapshot, fits: Callable[[str], bool], ellipsis: str = ELLIPSIS
) -> str:
    """The fullest headline of a node incident that `fits` (what its reader sees of it, measured the
    reader's way): whole; else the node shortened (to `MIN_NODE` characters at least); else the same
    without the GPU count; else the alert name alone, which the caller cuts if even that is too long.
    Storms and snapshots without the facts: `message_headline` (alert name first in English; in Chinese
    after the capped scope)."""
    text = message_headline(tr, snapshot)
    facts = _NodeFacts.of(snapshot)
    if facts is None or fits(text):
        return text
    for units in dict.fromkeys((facts.units, 0)) if facts.where else ():
        fitted = facts.fitted(tr, units, fits, ellipsis)
        if fitted is not None:
            return fitted
    return facts.what
