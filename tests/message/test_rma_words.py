"""What a message says of a GPU the rma: rules make a candidate, in both languages, and how the note is
stored and read back (a stored row is JSON anyone may have written)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.message.i18n import translations
from alertrouter.message.rma import RmaNote, rma_line, rma_notes_from_json
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import AlertStatus, IncidentKind

FIRST = datetime(2026, 11, 20, 8, 0, tzinfo=UTC)
UUID = "GPU-5f1c2a3b-9d4e-4f60-8a71-2b3c4d5e6f70"


def note(count: int, lasted: timedelta, **kw: object) -> RmaNote:
    fields: dict[str, object] = {"uuid": UUID, "slot": "3", "rule": "dbe-repeated", "count": count}
    fields |= {"first": FIRST, "last": FIRST + lasted, "xids": (48,)}
    return RmaNote(**(fields | kw))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("count", "lasted", "en", "zh"),
    [
        (2, timedelta(days=11, hours=3), "Xid 48 twice in 11 days", "11 天内 Xid 48 共 2 次"),
        (1, timedelta(0), "Xid 48 once", "Xid 48 1 次"),
        (3, timedelta(days=1), "Xid 48 3 times in 1 day", "1 天内 Xid 48 共 3 次"),
        (5, timedelta(hours=3, minutes=59), "Xid 48 5 times in 3 hours", "3 小时内 Xid 48 共 5 次"),
        (2, timedelta(minutes=40), "Xid 48 2 times within an hour", "1 小时内 Xid 48 共 2 次"),
    ],
)
def test_the_line_counts_the_evidence_in_both_languages(count: int, lasted: timedelta, en: str, zh: str) -> None:
    n = note(count, lasted)
    assert rma_line(translations("en"), n) == f"RMA candidate: GPU 3 (GPU-5f1c2a3b…): {en}"
    assert rma_line(translations("zh-CN"), n) == f"RMA 候选：GPU 3（GPU-5f1c2a3b…）：{zh}"


def test_alert_names_without_an_xid_and_a_gpu_without_a_slot() -> None:
    n = note(1, timedelta(0), slot="", xids=(), alertnames=("GPURowRemapFailure",))
    assert rma_line(translations("en"), n) == "RMA candidate: GPU-5f1c2a3b…: GPURowRemapFailure once"


def test_a_message_keeps_its_notes_and_an_old_row_has_none() -> None:
    message = MessageSnapshot(
        incident="node:gpu-by-node:GPUXidError/gpu-node-07",
        kind=IncidentKind.NODE,
        reason="first",
        status=AlertStatus.FIRING,
        severity="critical",
        headline="gpu-node-07: GPUXidError on 1/8 GPUs",
        rma=(note(2, timedelta(days=11)),),
    )
    stored = message.to_json()
    assert stored["rma"][0] | {"uuid": "-"} == {
        "uuid": "-",
        "slot": "3",
        "rule": "dbe-repeated",
        "count": 2,
        "first": "2026-11-20T08:00:00+00:00",
        "last": "2026-12-01T08:00:00+00:00",
        "xids": [48],
        "alertnames": [],
    }
    assert MessageSnapshot.from_json(stored) == message
    del stored["rma"]
    assert MessageSnapshot.from_json(stored).rma == ()
    assert "rma" not in MessageSnapshot.from_json(stored).to_json()  # a row without notes is written as before


@pytest.mark.parametrize(
    "hostile",
    [
        None,
        "x",
        [None, 3, "note"],
        [{"uuid": UUID, "count": True, "first": "2026-11-20T08:00:00Z", "last": "2026-12-01T08:00:00Z"}],
        [{"uuid": UUID, "count": 2, "first": "yesterday", "last": "2026-12-01T08:00:00Z"}],
        [{"uuid": 7, "count": 2, "first": "2026-11-20T08:00:00Z", "last": "2026-12-01T08:00:00Z"}],
    ],
)
def test_what_is_not_a_whole_note_reads_as_none(hostile: object) -> None:
    assert rma_notes_from_json(hostile) == ()


def test_a_whole_note_with_odd_lists_keeps_what_it_can() -> None:
    (read,) = rma_notes_from_json(
        [
            {
                "uuid": UUID,
                "count": 2,
                "first": "2026-11-20T08:00:00Z",
                "last": "2026-12-01T08:00:00Z",
                "xids": [48, "79", True],
            }
        ]
    )
    assert (read.xids, read.alertnames, read.slot) == ((48,), (), "")
