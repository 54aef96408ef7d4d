"""Outbox rows written before the message had typed facts still read, and are told in the same words.

`tests/fixtures/outbox_rows_before_message.json` holds literal rows in the shapes the engine wrote them
(`summary_dict`, the storm roll-up, an escalation step, a silent heartbeat, and older rows without the
facts a headline is worded from), with the DingTalk title and text and the SMS variables the code of
that time made of them, in English and Chinese. Captured before the facts were typed; never regenerated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification, notification_fields
from alertrouter.message.facts import EscalationNote, MemberFacts, NoData, NodeFacts, StormFacts, Tally
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates

FIXTURE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "outbox_rows_before_message.json").read_text(encoding="utf-8")
)
ROWS: dict[str, dict[str, Any]] = FIXTURE["rows"]
WORDS: dict[str, dict[str, Any]] = FIXTURE["words"]
KINDS = {"first": MessageKind.FIRING, "grew": MessageKind.UPDATE, "escalated": MessageKind.UPDATE}


def told(row: dict[str, Any], language: str) -> dict[str, Any]:
    snapshot = MessageSnapshot.from_json(row)
    kind = KINDS.get(row["reason"], MessageKind.RESOLVED)
    if row["kind"] == "cluster" and kind is not MessageKind.RESOLVED:
        kind = MessageKind.CLUSTER
    n = Notification(
        kind=kind,
        receiver="oncall",
        severity="critical",
        items=(snapshot,),
        link="https://alertrouter.example/i/1",
        locale=Locale(language, "Asia/Shanghai"),
        created_at=datetime(2026, 11, 21, 10, 3, tzinfo=UTC),
    )
    templates = Templates()
    return {
        "title": templates.title(n),
        "dingtalk": templates.render("dingtalk", "md", n),
        "sms": notification_fields(n),
    }


@pytest.mark.parametrize("name", sorted(ROWS))
def test_a_stored_row_reads_back_as_it_was_written(name: str) -> None:
    assert MessageSnapshot.from_json(ROWS[name]).to_json() == ROWS[name]


@pytest.mark.parametrize("key", sorted(WORDS))
def test_a_stored_row_is_told_in_the_words_it_was_told_in_before(key: str) -> None:
    name, language = key.split("/")
    now = told(ROWS[name], language)
    # SMS variables added since the rows were captured: empty for a row that has nothing to fill them
    added = {"rma": ""}
    assert {k: now["sms"].pop(k) for k in added} == added
    assert now == WORDS[key]


def test_the_facts_are_typed_per_kind() -> None:
    node = MessageSnapshot.from_json(ROWS["node"]).summary
    assert isinstance(node, NodeFacts)
    assert (node.where, node.units, node.units_total) == ("gpu-node-07", ("0", "1", "2", "3", "5", "7"), 8)
    assert node.tally == Tally(alerts=6, firing=6, eligible=6, muted=0, silenced=0)
    storm = MessageSnapshot.from_json(ROWS["storm"]).summary
    assert isinstance(storm, StormFacts)
    assert (storm.nodes, storm.units, storm.scope) == (3, 20, (("region", "north"),))  # a count, not a list
    assert storm.member_facts is not None
    assert storm.member_facts[2] == MemberFacts("gpu-node-03", 4, 8)
    stale = MessageSnapshot.from_json(ROWS["node_resolved_no_data"]).summary
    assert isinstance(stale, NodeFacts)
    assert stale.no_data == NoData("node-down/NodeDown/gpu-node-07", "NodeDown", "gpu-node-07", down=False)
    assert (stale.tally.stale, stale.tally.resolving) == (2, 0)
    step = MessageSnapshot.from_json(ROWS["escalation"]).summary.escalation
    assert step == EscalationNote("gpu-critical", 2, 3, "20m", 1200, ("sre-leads",))
    heartbeat = MessageSnapshot.from_json(ROWS["heartbeat"])
    assert heartbeat.heartbeat == "prometheus-north"


def test_older_rows_lack_the_facts_and_keep_their_stored_headline() -> None:
    node = MessageSnapshot.from_json(ROWS["node_before_facts"]).summary
    assert isinstance(node, NodeFacts)
    assert (node.where, node.alertname, node.tally.eligible) == (None, None, None)
    storm = MessageSnapshot.from_json(ROWS["storm_before_facts"]).summary
    assert isinstance(storm, StormFacts)
    assert (storm.scope, storm.member_facts) == (None, None)
    assert told(ROWS["storm_before_facts"], "zh-CN")["title"].endswith(ROWS["storm_before_facts"]["headline"])


@pytest.mark.parametrize(
    ("summary", "read"),
    [
        ({"units": 7, "units_total": "8", "firing": True}, NodeFacts(units_total=None, extra={})),
        ({"where": 42, "escalation": "step 2", "mood": "grim"}, NodeFacts(extra={"mood": "grim"})),
        ({"no_data_source": 1, "no_data_down": "yes"}, NodeFacts()),
    ],
)
def test_a_value_of_the_wrong_type_reads_as_absent_and_unknown_keys_are_kept(
    summary: dict[str, Any], read: NodeFacts
) -> None:
    row = {**ROWS["node"], "summary": summary}
    assert MessageSnapshot.from_json(row).summary == read
