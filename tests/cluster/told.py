"""What the cluster in a box told and what its store holds, read the same way by every scenario module.

`told(box)` is every message the vendor fakes accepted, per channel of the shipped rules/channels.yml, as text
(DingTalk and WeCom bodies as JSON, SMS template parameters as JSON, mails as subject + body); `Snapshot`
is the store as alertrouter's read API shows it, taken once the box is at rest.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from cluster.box import (
    DINGTALK_CORE,
    DINGTALK_NORTH,
    DINGTALK_OPS,
    DINGTALK_SOUTH,
    ONCALL_PHONE,
    ONCALL_PHONE_NORTH,
    ONCALL_PHONE_SOUTH,
    WECOM_KEY,
    ClusterBox,
    is_digest,
)
from cluster.rack import settled
from e2e.harness import wait_for

__all__ = ["SHANGHAI", "Snapshot", "about", "at", "clock", "lasted", "settle", "told"]

SHANGHAI = ZoneInfo("Asia/Shanghai")  # the shipped rules' global.timezone

_PHONES = {ONCALL_PHONE: "sms-oncall", ONCALL_PHONE_NORTH: "sms-north", ONCALL_PHONE_SOUTH: "sms-south"}


def told(box: ClusterBox) -> dict[str, list[str]]:
    """Channel -> the texts it delivered, oldest first. SMS are keyed by number: `sms-oncall` (ONCALL_PHONE),
    `sms-north`, `sms-south`; mail leaves out the weekly digest a fresh install also sends."""
    v = box.vendors

    def dump(body: Any) -> str:
        return json.dumps(body, ensure_ascii=False)

    out: dict[str, list[str]] = {
        "dingtalk-core": [dump(b) for b in v.dingtalk.messages(DINGTALK_CORE)],
        "dingtalk-ops": [dump(b) for b in v.dingtalk.messages(DINGTALK_OPS)],
        "dingtalk-north": [dump(b) for b in v.dingtalk.messages(DINGTALK_NORTH)],
        "dingtalk-south": [dump(b) for b in v.dingtalk.messages(DINGTALK_SOUTH)],
        "wecom-core": [dump(b) for b in v.wecom.messages(WECOM_KEY)],
        "sms-oncall": [],
        "sms-north": [],
        "sms-south": [],
        "email-ops": [],
    }
    for number, params in list(v.aliyun.sent):
        out[_PHONES.get(number, f"sms {number}")].append(dump(params))
    for mail in list(v.smtp.messages):
        if not is_digest(mail):
            body = mail.get_body(("plain",))
            out["email-ops"].append(f"{mail['Subject']}\n{body.get_content() if body is not None else ''}")
    return out


def about(texts: list[str], *words: str) -> list[str]:
    """The texts that contain every word."""
    return [t for t in texts if all(w in t for w in words)]


def at(value: object) -> datetime:
    """A time the API wrote (ISO 8601, with its offset)."""
    return datetime.fromisoformat(str(value))


def clock(alerts: list[dict[str, Any]], zone: ZoneInfo = SHANGHAI) -> str:
    """When these alerts started, as a message written for `zone` shows it (`03:12 CST`): the earliest
    `startsAt` Prometheus gave them (the API's `starts_at`), never when alertrouter heard of them."""
    first = min(at(a["starts_at"]) for a in alerts).astimezone(zone)
    return f"{first:%H:%M} {first:%Z}"


# How long, as a reader of each language is told (whole units, cut down, never rounded up)
_LASTED = {
    "en": ("{s}s", "{m}m", "{h}h", "{h}h {m}m"),
    "zh-CN": ("{s} 秒", "{m} 分钟", "{h} 小时", "{h} 小时 {m} 分钟"),
}


def lasted(alerts: list[dict[str, Any]], language: str) -> str:
    """How long these alerts lasted: from their earliest `startsAt` to the latest `endsAt` that resolved
    them (the API's `starts_at` / `ends_at`), in `language`'s words. Under a day (the box's scenarios)."""
    seconds = int((max(at(a["ends_at"]) for a in alerts) - min(at(a["starts_at"]) for a in alerts)).total_seconds())
    assert 0 <= seconds < 86400, seconds
    second, minute, hour, hour_minute = _LASTED[language]
    if seconds < 60:
        return second.format(s=seconds)
    if seconds < 3600:
        return minute.format(m=seconds // 60)
    h, m = seconds // 3600, seconds % 3600 // 60
    return hour_minute.format(h=h, m=m) if m else hour.format(h=h)


@dataclass
class Snapshot:
    """The store at rest, through the read API of one replica (both read the one database)."""

    alerts: list[dict[str, Any]]
    notifications: list[dict[str, Any]]
    incidents: list[dict[str, Any]]
    addresses: list[dict[str, Any]]  # GET /api/v1/nodes: learned address -> node

    def of(self, alertname: str, node: str | None = None) -> list[dict[str, Any]]:
        return [a for a in self.alerts if a["alertname"] == alertname and (node is None or a["node"] == node)]

    def incident(self, *, alertname: str, node: str | None, kind: str = "node") -> dict[str, Any]:
        found = [
            i
            for i in self.incidents
            if i["kind"] == kind and i["labels"].get("alertname") == alertname and i["labels"].get("node") == node
        ]
        assert len(found) == 1, f"{len(found)} {kind} incidents of {alertname} {node}: {found}"
        return found[0]

    def delivered(self, incident_id: int) -> dict[str, int]:
        """Channel -> sent deliveries of one incident."""
        counts: dict[str, int] = {}
        for row in self.notifications:
            if row["incident_id"] == incident_id and row["status"] == "sent":
                counts[row["channel"]] = counts.get(row["channel"], 0) + 1
        return counts


def settle(box: ClusterBox, timeout: float = 120.0) -> Snapshot:
    router = box.routers[0]
    rows = wait_for(lambda: settled(router), what="no held alert and no pending delivery", timeout=timeout)
    assert rows is not None
    incidents = router.http.get("/api/v1/incidents", params={"limit": 1000})
    assert incidents.status_code == 200, incidents.text
    nodes = router.http.get("/api/v1/nodes")
    assert nodes.status_code == 200, nodes.text
    return Snapshot(router.alerts(), rows, incidents.json()["incidents"], nodes.json()["addresses"])
