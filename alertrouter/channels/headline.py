"""A message's headline, the alert name kept whole: the node (and a storm's scope values) shortened instead.

The node is a label value, as long as an exporter made it (`Hostname`, `node`: 4,096 characters pass
the ingest); the headline starts with it (`gpu-node-07: GPUHighTemp on 6/8 GPUs`, `north 区 40 个节点
GPUXidError`), so a title or an SMS variable cut at its end would lose the alert name. Every headline a
message shows is made here: with the node cut to `NODE_CAP` characters, and, where the headline must fit
a size (a title, an SMS or voice variable) and a cut would reach the alert name, the GPU count dropped,
then the node shortened further, then the node dropped, before anything of the alert name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from alertrouter.message.facts import MemberFacts, NodeFacts, StormFacts
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.message.words import Words
from alertrouter.model import HEARTBEAT_ALERTNAME, IncidentKind

__all__ = ["MIN_NODE", "NODE_CAP", "fitted_headline", "message_headline", "short_member_line", "shorten"]

NODE_CAP = 64  # characters of a node (or of a storm's region, rack, cluster) in any headline
MIN_NODE = 6  # characters of a node kept, at least, before a headline that must fit drops it
ELLIPSIS = "…"


def shorten(value: str, keep: int, ellipsis: str = ELLIPSIS) -> str:
    """`value` whole if at most `keep` characters, else its first `keep` and `ellipsis`."""
    return value if len(value) <= keep else value[:keep].rstrip() + ellipsis


def _capped(snapshot: MessageSnapshot, keep: int, ellipsis: str) -> MessageSnapshot:
    """`snapshot` with its facts' `where` and scope values as a headline shows them."""
    facts = snapshot.summary
    if isinstance(facts, StormFacts):
        if facts.scope is None:
            return snapshot
        scope = tuple((name, shorten(value, keep, ellipsis)) for name, value in facts.scope)
        return replace(snapshot, summary=replace(facts, scope=scope))
    if facts.where is None:
        return snapshot
    return replace(snapshot, summary=replace(facts, where=shorten(facts.where, keep, ellipsis)))


def message_headline(words: Words, snapshot: MessageSnapshot) -> str:
    """`Words.headline` with the node and scope values cut to `NODE_CAP` characters. A snapshot without
    the facts (stored before they were) keeps the headline it was stored with, as `Words.headline` does."""
    return words.headline(_capped(snapshot, NODE_CAP, ELLIPSIS))


def short_member_line(words: Words, member: MemberFacts, alertname: str, unit_name: str) -> str:
    """`Words.member_line` (a storm's member node) with its node cut to `NODE_CAP` characters."""
    return words.member_line(replace(member, where=shorten(member.where, NODE_CAP)), alertname, unit_name)


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


def _node_facts(snapshot: MessageSnapshot) -> tuple[str, str] | None:
    """(node, alert name) of a node incident's headline (`pipeline.incident.node_facts` states them)."""
    facts, what = snapshot.summary, snapshot.alertname
    if snapshot.kind is not IncidentKind.NODE or not isinstance(facts, NodeFacts) or facts.where is None or not what:
        return None
    if what == HEARTBEAT_ALERTNAME:  # worded as a blind heartbeat, not from the node
        return None
    return facts.where, what


def fitted_headline(
    words: Words, snapshot: MessageSnapshot, fits: Callable[[str], bool], ellipsis: str = ELLIPSIS
) -> str:
    """`message_headline` when it `fits` (what its reader sees of it, measured the reader's way), or when
    the caller's cut (`ellipsis` after it) still keeps the alert name whole: in English the GPU count comes
    last. Else, for a node incident, the node and the alert name without the count, the node shortened
    as little as fits (to `MIN_NODE` characters at least); else the alert name alone, which the caller
    cuts if even that is too long. Storms: `message_headline` (the alert name first in English; in
    Chinese after the scope, capped)."""
    text = message_headline(words, snapshot)
    facts = _node_facts(snapshot)
    if facts is None or fits(text):
        return text
    where, what = facts
    end = text.rfind(what)
    if end >= 0 and fits(text[: end + len(what)] + ellipsis):
        return text
    if where:

        def worded(keep: int) -> str:
            return words.node_headline(shorten(where, keep, ellipsis), what)

        hi = min(len(where), NODE_CAP)
        keep = _largest(lambda k: fits(worded(k)), min(MIN_NODE, hi), hi)
        if keep is not None:
            return worded(keep)
    return what
