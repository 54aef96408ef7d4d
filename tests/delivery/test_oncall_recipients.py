"""Receivers naming a schedule: whoever is on call when the engine decided the message is pinged in chat
(DingTalk user id or WeCom user id, and the mobile) or texted / mailed, and recorded with the delivery."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from alertrouter.delivery.expand import delivery_rows
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.model import AlertStatus, IncidentKind
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.oncall import build_rota

RULES = """
oncall:
  people:
    - {name: ana, display_name: Ana, mobile: "13800000001", dingtalk: ding-ana, wecom: wecom-ana,
       email: ana@example.org}
    - {name: bo, mobile: "13800000002", dingtalk: ding-bo, wecom: wecom-bo, email: bo@example.org}
  schedules:
    - {name: primary, timezone: Asia/Shanghai, layers: [{people: [ana, bo], rotation: 1d, start: "2026-11-20 10:00"}]}
route: {receiver: step}
receivers:
  - name: step
    channels:
      - {channel: ding, mentions: {mobiles: ["13900000000"], oncall: [primary]}}
      - {channel: wecom, mentions: {oncall: [primary]}}
      - {channel: sms, to: ["13900000000"], oncall: [primary]}
      - {channel: mail, oncall: [primary]}
channels:
  - {name: ding, type: dingtalk, access_token: "${T}"}
  - {name: wecom, type: wecom, key: "${T}"}
  - name: sms
    type: sms
    provider: aliyun
    aliyun: {access_key_id: "${T}", access_key_secret: "${T}", sign_name: n, template_code: SMS_1}
  - {name: mail, type: email, host: smtp.example.org, from: ar@example.org, to: [ops@example.org]}
"""


def rows_at(tmp_path: Path, created_at: datetime) -> dict[str, dict[str, Any]]:
    (tmp_path / "rules.yml").write_text(RULES)
    ruleset = load_ruleset(tmp_path, {"T": "x"})
    outbox: Any = SimpleNamespace(id=1, incident_key="k", receiver="step", created_at=created_at)
    message = MessageSnapshot("k", IncidentKind.NODE, "escalated", AlertStatus.FIRING, "critical", "h")
    rows = delivery_rows(
        outbox,
        message,
        ruleset.receivers[0],
        {c.name: c for c in ruleset.channels},
        severities=["critical"],
        details={},
        incident_ids={},
        unconfigured=[],
        now=created_at + timedelta(seconds=1),
        rota=build_rota(ruleset.oncall),
    )
    return {r["channel"]: r["message"] for r in rows}


def test_the_person_on_call_when_the_message_was_decided_is_reached(tmp_path: Path) -> None:
    # 2026-11-21 09:59 Shanghai: still the 20th's shift (ana); bo from 10:00
    messages = rows_at(tmp_path, datetime(2026, 11, 21, 1, 59, tzinfo=UTC))
    assert messages["ding"]["mentions"]["mobiles"] == ["13900000000", "13800000001"]
    assert messages["ding"]["mentions"]["user_ids"] == ["ding-ana"]
    assert messages["wecom"]["mentions"]["user_ids"] == ["wecom-ana"]
    assert messages["sms"]["recipients"] == ["13900000000", "13800000001"]
    assert messages["mail"]["recipients"] == ["ana@example.org"]  # the schedule's person, not the channel's `to`
    assert messages["ding"]["oncall"] == [{"schedule": "primary", "person": "ana", "name": "Ana"}]
    later = rows_at(tmp_path, datetime(2026, 11, 21, 2, 0, tzinfo=UTC))
    assert later["sms"]["recipients"] == ["13900000000", "13800000002"]
    assert later["ding"]["mentions"]["user_ids"] == ["ding-bo"]
