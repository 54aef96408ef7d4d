"""The incident records the engine reads back (`load_incidents`, at its first pass and after taking the
lease): what the pass wrote, on SQLite and PostgreSQL, held compactly (30,000 of them in a big fleet)."""

from __future__ import annotations

import json
from datetime import timedelta

from alertrouter.labelset import LabelSet
from alertrouter.message.facts import NodeFacts, facts_from_json
from alertrouter.model import IncidentKind
from alertrouter.pipeline.types import IncidentState
from alertrouter.store import Database
from alertrouter.store.incidents import load_incidents, save_incidents
from support.rows import T0

# A node incident's summary as the engine writes it (`pipeline.incident.node_facts`), with a stale part
SUMMARY = {
    "headline": "gpu-node-07: GPUHighTemp on 6/8 GPUs",
    "where": "gpu-node-07",
    "alertname": "GPUHighTemp",
    "units": ["0", "1", "2", "3", "5", "6"],
    "units_total": 8,
    "unit_name": "GPUs",
    "alerts": 6,
    "firing": 6,
    "eligible": 6,
    "muted": 0,
    "silenced": 0,
    "stale": 1,
    "no_data_since": "2026-11-21T07:58:00+00:00",
}
LABELS = {"alertname": "GPUHighTemp", "node": "gpu-node-07", "region": "north", "severity": "critical"}


async def test_a_record_reads_back_as_written_its_labels_and_summary_compact(db: Database) -> None:
    state = IncidentState(
        key='gpu-by-node{alertname="GPUHighTemp",node="gpu-node-07"}',
        kind="node",
        rule="gpu-by-node",
        firing=True,
        severity="critical",
        headline=str(SUMMARY["headline"]),
        labels=LABELS,
        summary=facts_from_json(IncidentKind.NODE, SUMMARY),
        parent=None,
        opened_at=T0 - timedelta(minutes=3),
        active_since=T0 - timedelta(minutes=2),
        resolved_at=None,
    )
    async with db.write() as session:
        await save_incidents(session, [state], T0)
        await session.commit()
    async with db.read() as session:
        records, _ = await load_incidents(session, resolved_since=T0 - timedelta(hours=1))
    record = records[state.key]
    # The summary is held as its typed facts now (was a `LabelSet` of the stored keys): the same values.
    assert record.summary == state.summary
    assert record.summary.to_json() == SUMMARY
    assert record.labels == LABELS
    assert json.loads(json.dumps(record.summary.to_json())) == SUMMARY  # as the engine writes it again
    # Compact: labels as values against names shared by every record with the same ones, not a dict each;
    # the facts' texts one object with the record's.
    assert type(record.summary) is NodeFacts
    assert record.summary.headline is record.headline
    assert type(record.labels) is LabelSet
