"""An incident described as its record already describes it keeps the record's labels and summary objects:
the engine holds a record and a state for every live incident, and copies of the same description in
both were 14 MiB at 30,000 incidents."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

from alertrouter.fingerprints import fingerprint
from alertrouter.labelset import LabelSet
from alertrouter.message.facts import facts_from_json
from alertrouter.model import IncidentKind
from alertrouter.pipeline.evaluate import Evaluator
from alertrouter.pipeline.types import IncidentRecord, LiveAlert, next_records
from support.scenario import T0, dcgm_labels, shipped_pipeline

S = timedelta(seconds=1)


def hot(gpus: range) -> list[LiveAlert]:
    labels = [dcgm_labels("10.0.3.7", "gpu-node-07", g, "GPUHighTemp", severity="warning") for g in gpus]
    return [LiveAlert(fingerprint(x), x, True, T0, T0) for x in labels]


def as_read_back(records: dict[str, IncidentRecord]) -> dict[str, IncidentRecord]:
    """The records as a restarted engine reads them from the store: new objects, decoded from JSON."""
    return {
        k: replace(
            r,
            labels=LabelSet(json.loads(json.dumps(dict(r.labels)))),
            summary=facts_from_json(IncidentKind(r.kind), json.loads(json.dumps(r.summary.to_json()))),
        )
        for k, r in records.items()
    }


def test_a_state_takes_its_records_labels_and_summary_when_they_describe_it_and_its_own_when_not() -> None:
    first = Evaluator(shipped_pipeline()).evaluate(hot(range(3)), {}, now=T0)
    records = as_read_back(next_records({}, first))
    (key,) = [k for k, s in first.incidents.items() if s.kind == "node"]
    # A fresh evaluator, as after a restart, over the same alerts: the incident is described as before.
    again = Evaluator(shipped_pipeline()).evaluate(hot(range(3)), records, now=T0 + 5 * S)
    state, record = again.incidents[key], records[key]
    assert state.summary == record.summary
    assert state.labels == record.labels
    assert state.summary is record.summary
    assert state.labels is record.labels
    # A fourth GPU: another description, the state's own.
    grown = Evaluator(shipped_pipeline()).evaluate(hot(range(4)), records, now=T0 + 5 * S)
    assert grown.incidents[key].summary != record.summary
    assert grown.incidents[key].summary is not record.summary
