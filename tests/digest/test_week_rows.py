"""What the digest reads from each outbox row of its week (`digest.stats.week_rows`): severity and
headline for the counts, the first readable message of an incident for its facts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from alertrouter.digest.stats import week_rows
from alertrouter.store.digest import OutboxEntry, WeekHistory

START = datetime(2026, 11, 16, tzinfo=UTC)
END = START + timedelta(days=7)
AT = START + timedelta(days=1)
NODE = 'gpu-by-node{alertname="GPUHighTemp",node="node-07"}'
STORM = "storm:GPUHighTemp"


def test_each_outbox_row_counts_and_the_first_readable_message_gives_the_facts() -> None:
    damaged = {"headline": "node-07: GPUHighTemp on 1/8 GPUs", "severity": "critical", "alerts": "not a list"}
    grew = {"incident": NODE, "reason": "grew", "severity": "critical", "headline": "node-07: GPUHighTemp on 2/8 GPUs"}
    resolved = {"incident": NODE, "reason": "resolved", "status": "resolved", "headline": "node-07: resolved"}
    week = WeekHistory(
        outbox=[
            OutboxEntry("ops", "first", NODE, damaged, AT),
            OutboxEntry("ops", "grew", NODE, grew, AT + timedelta(minutes=30)),
            OutboxEntry("ops", "resolved", NODE, resolved, AT + timedelta(hours=1)),
            OutboxEntry("gpu-team", "first", STORM, {}, AT + timedelta(hours=2)),  # not a JSON object when stored
        ],
        payloads=3,
    )
    rows = week_rows(week, start=START, end=END, now=END - timedelta(days=1))

    assert rows.intents == [
        ("ops", "first", NODE, "critical", "node-07: GPUHighTemp on 1/8 GPUs", AT),
        ("ops", "grew", NODE, "critical", "node-07: GPUHighTemp on 2/8 GPUs", AT + timedelta(minutes=30)),
        ("ops", "resolved", NODE, "", "node-07: resolved", AT + timedelta(hours=1)),
        ("gpu-team", "first", STORM, "", STORM, AT + timedelta(hours=2)),  # no headline: the incident's key
    ]
    assert sorted(rows.snapshots) == [NODE, STORM]
    assert rows.snapshots[NODE].reason == "grew"  # the damaged first message gave none
    assert (rows.start, rows.end, rows.read_at, rows.payloads) == (START, END, END - timedelta(days=1), 3)
