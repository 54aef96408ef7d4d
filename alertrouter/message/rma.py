"""That a GPU of a message is an RMA candidate, and why, as the message carries it and says it.

The engine finds it in the GPU's history (`engine.gpus`) when it decides a message, so every channel, the
console and the stored outbox row say the same; the words are made here, in the receiver's language:
`RMA candidate: GPU 3 (GPU-5f1c…): Xid 48 twice in 11 days` / `RMA 候选：GPU 3（GPU-5f1c…）：11 天内 Xid 48 共 2 次`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from gettext import NullTranslations
from typing import Any

from alertrouter.model import parse_time

__all__ = ["RmaNote", "evidence_times", "rma_line", "rma_lines", "rma_notes_from_json"]

_UUID_SHOWN = 12  # of a UUID in running text: "GPU-5f1c2a3b…" tells GPUs of one node apart


@dataclass(frozen=True, slots=True)
class RmaNote:
    """One GPU of the message that the `rma:` rules make a candidate: the rule met, what its evidence
    counts (Xids and alert names), how many events, and the first and last of them (their `startsAt`)."""

    uuid: str
    slot: str
    rule: str
    count: int
    first: datetime
    last: datetime
    xids: tuple[int, ...] = ()
    alertnames: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "uuid": self.uuid,
            "slot": self.slot,
            "rule": self.rule,
            "count": self.count,
            "first": self.first.isoformat(),
            "last": self.last.isoformat(),
            "xids": list(self.xids),
            "alertnames": list(self.alertnames),
        }

    @classmethod
    def from_json(cls, data: object) -> RmaNote | None:
        """None for anything that is not a whole note (a stored row is JSON anyone may have written)."""
        if not isinstance(data, Mapping):
            return None
        first, last = (parse_time(v) if isinstance(v := data.get(k), str) else None for k in ("first", "last"))
        count, uuid = data.get("count"), data.get("uuid")
        if (
            first is None
            or last is None
            or not isinstance(uuid, str)
            or not isinstance(count, int)
            or isinstance(count, bool)
        ):
            return None
        xids, names = data.get("xids"), data.get("alertnames")
        return cls(
            uuid=uuid,
            slot=str(data.get("slot") or ""),
            rule=str(data.get("rule") or ""),
            count=count,
            first=first,
            last=last,
            xids=tuple(x for x in xids if _is_int(x)) if isinstance(xids, list) else (),
            alertnames=tuple(n for n in names if isinstance(n, str)) if isinstance(names, list) else (),
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def rma_notes_from_json(data: object) -> tuple[RmaNote, ...]:
    return tuple(n for item in data if (n := RmaNote.from_json(item)) is not None) if isinstance(data, list) else ()


def _gpu(tr: NullTranslations, note: RmaNote) -> str:
    uuid = note.uuid if len(note.uuid) <= _UUID_SHOWN else note.uuid[:_UUID_SHOWN] + "…"
    if not note.slot:
        return uuid
    return tr.gettext("GPU %(slot)s (%(uuid)s)") % {"slot": note.slot, "uuid": uuid}


def _what(note: RmaNote) -> str:
    return " / ".join([f"Xid {x}" for x in note.xids] + list(note.alertnames)) or note.rule


def evidence_times(tr: NullTranslations, what: str, count: int, first: datetime, last: datetime) -> str:
    """`Xid 48 twice in 11 days` / `11 天内 Xid 48 共 2 次`: how often the evidence counts, in how long
    (messages and the weekly digest say it alike)."""
    if count == 1:
        return tr.gettext("%(what)s once") % {"what": what}
    span = last - first
    days, hours = span.days, int(span.total_seconds() // 3600)
    values = {"what": what, "count": count, "days": days, "hours": hours}
    if days >= 1 and count == 2:
        return tr.ngettext("%(what)s twice in %(days)s day", "%(what)s twice in %(days)s days", days) % values
    if days >= 1:
        text = tr.ngettext(
            "%(what)s %(count)s times in %(days)s day", "%(what)s %(count)s times in %(days)s days", days
        )
        return text % values
    if hours >= 1:
        text = tr.ngettext(
            "%(what)s %(count)s times in %(hours)s hour", "%(what)s %(count)s times in %(hours)s hours", hours
        )
        return text % values
    return tr.gettext("%(what)s %(count)s times within an hour") % values


def rma_line(tr: NullTranslations, note: RmaNote) -> str:
    """`RMA candidate: GPU 3 (GPU-5f1c2a3b-9…): Xid 48 twice in 11 days`, in the language of `tr`."""
    times = evidence_times(tr, _what(note), note.count, note.first, note.last)
    return tr.gettext("RMA candidate: %(gpu)s: %(times)s") % {"gpu": _gpu(tr, note), "times": times}


def rma_lines(tr: NullTranslations, notes: Sequence[RmaNote]) -> list[str]:
    return [rma_line(tr, note) for note in notes]
