"""SMS and email end to end: `alertrouter serve` delivering every message kind (firing, update, resolved,
cluster, coalesced) to local fakes of Aliyun SendSms, Tencent Cloud SendSms, a generic SMS gateway
and an SMTP server, each of which checks signatures, credentials, template variables and lengths
like the real service and refuses what it would refuse."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Router, Store, gpu_labels, wait_for, webhook, webhook_alert
from support.fakes.aliyun import FakeAliyunSms
from support.fakes.smsgateway import FakeSmsGateway
from support.fakes.smtp import FakeSmtp
from support.fakes.tencent import FakeTencentSms

pytestmark = [
    pytest.mark.e2e,
    # the sink takes AUTH over plain SMTP on loopback, on purpose; aiosmtpd warns about it
    pytest.mark.filterwarnings("ignore:Requiring AUTH while not requiring TLS:UserWarning"),
]

# literal test credentials, nothing real
ALIYUN_KEY_ID, ALIYUN_SECRET = "LTAI5tE2eKeyId0007", "aliyun-e2e-Secret/+*~07"
TENCENT_ID, TENCENT_KEY = "AKIDe2eSecretId0007", "tencent-e2e-SecretKey07"
GATEWAY_TOKEN = "gateway-e2e-token-4c1d"
SMTP_USER, SMTP_PASSWORD = "alertrouter", "smtp-e2e-Pa55word"
SECRETS = (ALIYUN_KEY_ID, ALIYUN_SECRET, TENCENT_ID, TENCENT_KEY, GATEWAY_TOKEN, SMTP_PASSWORD)

ALIYUN_TEMPLATE, TENCENT_TEMPLATE, TENCENT_APP, SIGN = "SMS_480000001", "1110", "1400006666", "GPU告警"
# Each provider's variable length as configured, and as its fake enforces (longer is refused).
ALIYUN_MAX, TENCENT_MAX, GATEWAY_MAX = 35, 12, 20
ALIYUN_PHONE, TENCENT_PHONE, GATEWAY_PHONE = "13800138000", "+8613800138001", "13800138002"
MAIL_TO = ("oncall@example.com", "gpu-ops@example.com")
EXTERNAL = "http://alertrouter.test"
HOSTILE_RACK = 'r12 <script>alert("x")</script> & <b>'
CHANNELS = ("sms-aliyun", "sms-tencent", "sms-gateway", "mail")


@dataclass
class Vendors:
    aliyun: FakeAliyunSms
    tencent: FakeTencentSms
    gateway: FakeSmsGateway
    smtp: FakeSmtp

    def aliyun_params(self) -> list[dict[str, str]]:
        assert all(number == ALIYUN_PHONE for number, _ in self.aliyun.sent)
        return [params for _, params in self.aliyun.sent]

    def tencent_params(self) -> list[list[str]]:
        assert all(number == TENCENT_PHONE for number, _ in self.tencent.sent)
        return [values for _, values in self.tencent.sent]

    def gateway_bodies(self) -> list[dict[str, Any]]:
        bodies = [r.json() for r in self.gateway.accepted]
        assert all(b["to"] == [GATEWAY_PHONE] for b in bodies)
        return bodies

    def mails(self) -> list[EmailMessage]:
        assert all(e.rcpt_tos == MAIL_TO for e in self.smtp.envelopes)
        return list(self.smtp.messages)

    def counts(self) -> tuple[int, int, int, int]:
        return len(self.aliyun.sent), len(self.tencent.sent), len(self.gateway.sent), len(self.smtp.messages)

    def refused(self) -> list[str]:
        """Every request a fake answered with an error (a bad signature, a variable too long, ...)."""
        bad = [r.body.decode(errors="replace")[:300] for r in self.aliyun.refused]
        bad += [r.body.decode(errors="replace")[:300] for r in self.tencent.refused]
        bad += [r.body.decode(errors="replace")[:300] for r in self.gateway.refused]
        return bad + [f"smtp login failed x{self.smtp.failed_logins}"] * bool(self.smtp.failed_logins)


@pytest.fixture
def vendors() -> Iterator[Vendors]:
    aliyun = FakeAliyunSms(
        {ALIYUN_KEY_ID: ALIYUN_SECRET},
        sign_names=(SIGN,),
        templates={ALIYUN_TEMPLATE: ("level", "alert", "host", "gpus", "n")},
        param_limit=ALIYUN_MAX,
    )
    tencent = FakeTencentSms(
        {TENCENT_ID: TENCENT_KEY},
        sdk_app_ids=(TENCENT_APP,),
        sign_names=(SIGN,),
        templates={TENCENT_TEMPLATE: 4},
        param_limit=TENCENT_MAX,
    )
    gateway = FakeSmsGateway(GATEWAY_TOKEN)
    smtp = FakeSmtp(users={SMTP_USER: SMTP_PASSWORD})
    with aliyun, tencent, gateway, smtp:
        yield Vendors(aliyun, tencent, gateway, smtp)


def rules(v: Vendors, *, rollup: str = "off", rate: str = "null") -> str:
    every = f"timeout: 3s\n    retry: {{initial: 1s, max: 2s, give_up_after: 1h}}\n    rate_limit: {rate}"
    return f"""\
global:
  external_url: ${{ALERTROUTER_EXTERNAL_URL}}
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {{label: gpu, per_group: 8}}
    group_wait: 1s
    group_interval: 2s
    rollup: {rollup}
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
  send_resolved: true
receivers:
  - name: oncall
    channels:
      - {{channel: sms-aliyun, to: ["{ALIYUN_PHONE}"]}}
      - {{channel: sms-tencent, to: ["{TENCENT_PHONE}"]}}
      - {{channel: sms-gateway, to: ["{GATEWAY_PHONE}"]}}
      - mail
channels:
  - name: sms-aliyun
    type: sms
    provider: aliyun
    aliyun:
      access_key_id: ${{ALIYUN_KEY_ID}}
      access_key_secret: ${{ALIYUN_SECRET}}
      sign_name: {SIGN}
      template_code: {ALIYUN_TEMPLATE}
      endpoint: {v.aliyun.url}/
    params: {{level: severity, alert: headline, host: node, gpus: gpus, n: incidents}}
    param_max_length: {ALIYUN_MAX}
    {every}
  - name: sms-tencent
    type: sms
    provider: tencent
    tencent:
      secret_id: ${{TENCENT_ID}}
      secret_key: ${{TENCENT_KEY}}
      sdk_app_id: "{TENCENT_APP}"
      sign_name: {SIGN}
      template_id: "{TENCENT_TEMPLATE}"
      endpoint: {v.tencent.url}/
    params: {{"1": severity, "2": headline, "3": gpus, "4": incidents}}
    param_max_length: {TENCENT_MAX}
    {every}
  - name: sms-gateway
    type: sms
    provider: generic
    generic: {{url: {v.gateway.url}/v1/sms, token: "${{GATEWAY_TOKEN}}"}}
    params: {{headline: headline, gpus: gpus, node: node, incidents: incidents}}
    param_max_length: {GATEWAY_MAX}
    {every}
  - name: mail
    type: email
    host: {v.smtp.host}
    port: {v.smtp.port}
    security: none
    username: {SMTP_USER}
    password: ${{SMTP_PASSWORD}}
    from: "alertrouter <alertrouter@example.com>"
    to: [{", ".join(MAIL_TO)}]
    {every}
"""


def start(start_router: Callable[..., Router], store: Store, tmp_path: Path, text: str) -> Router:
    directory = tmp_path / "rules"
    directory.mkdir(exist_ok=True)
    (directory / "rules.yml").write_text(text)
    env = {
        "ALERTROUTER_CONFIG": str(directory),
        "ALERTROUTER_EXTERNAL_URL": EXTERNAL,
        "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        "ALIYUN_KEY_ID": ALIYUN_KEY_ID,
        "ALIYUN_SECRET": ALIYUN_SECRET,
        "TENCENT_ID": TENCENT_ID,
        "TENCENT_KEY": TENCENT_KEY,
        "GATEWAY_TOKEN": GATEWAY_TOKEN,
        "SMTP_PASSWORD": SMTP_PASSWORD,
    }
    return start_router(store, env=env)


def labels(node: int, gpu: int, *, alertname: str = "GPUHighTemp", **extra: str) -> dict[str, str]:
    return {**gpu_labels(node, gpu, alertname=alertname, severity="critical"), "region": "north", **extra}


def fallen_off_the_bus(dcgm: dict[str, str], since: datetime) -> dict[str, Any]:
    """An XID 79 alert; on odd nodes with the label dcgm-exporter calls `hostname` since 2026
    (`Hostname` before): a fleet sends both."""
    gpu, host = dcgm["gpu"], dcgm["Hostname"]
    notes = {
        "summary": f"GPU {gpu} on {host} has fallen off the bus",
        "description": f"XID 79 on GPU {gpu} ({dcgm['pci_bus_id']}) of {host}: drain the node and reseat or RMA.",
    }
    spelled = "hostname" if int(host.rsplit("-", 1)[1]) % 2 else "Hostname"
    relabelled = {(spelled if k == "Hostname" else k): v for k, v in dcgm.items()}
    return webhook_alert({**relabelled, "xid": "79"}, starts_at=since, annotations=notes)


def post(router: Router, alerts: list[dict[str, Any]]) -> None:
    r = router.post_webhook(webhook(alerts))
    assert r.status_code == 200, r.text


def notifications(router: Router) -> list[dict[str, Any]]:
    r = router.http.get("/api/v1/notifications", params={"limit": 1000})
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()["notifications"]
    return found


def received(router: Router, v: Vendors, n: int, what: str) -> None:
    """Wait until every vendor has taken `n` messages; fail at once on anything a vendor refused (a bad
    signature, a variable too long, ...) or a delivery given up on."""

    def check() -> bool:
        assert v.refused() == [], "a fake refused a request"
        dead = [r for r in notifications(router) if r["status"] == "dead"]
        assert dead == [], "a delivery became a dead letter"
        return all(c >= n for c in v.counts())

    wait_for(check, what=what, timeout=30)


def settled(router: Router) -> list[dict[str, Any]]:
    """Every delivery done (sent, or coalesced into a sent one), none left pending or dead."""

    def check() -> list[dict[str, Any]]:
        rows = notifications(router)
        return rows if rows and all(r["status"] in ("sent", "coalesced") for r in rows) else []

    return wait_for(check, what="every delivery sent", timeout=30)


def subject(mail: EmailMessage) -> str:
    """The subject as a mail client shows it. A long one is folded (Python's generator folds one with a
    comma or colon right after `Subject:`), and Python's parser keeps the folding space in front."""
    return str(mail["Subject"]).strip()


def parts(mail: EmailMessage) -> tuple[str, str]:
    text, html = mail.get_body(("plain",)), mail.get_body(("html",))
    assert text is not None, "no text/plain part"
    assert html is not None, "no text/html part"
    return text.get_content(), html.get_content()


def cut(value: str, limit: int) -> str:
    """A template variable as a channel fits it: whole, or cut to `limit` characters ending in ".." """
    return value if len(value) <= limit else value[: limit - 2].rstrip() + ".."


def assert_sms_fits_and_secret_free(v: Vendors, router: Router) -> None:
    """Every variable within its provider's length and never empty; no secret in what anyone can read."""
    for params in v.aliyun_params():
        assert all(0 < len(value) <= ALIYUN_MAX for value in params.values()), params
    for values in v.tencent_params():
        assert all(0 < len(value) <= TENCENT_MAX for value in values), values
    for body in v.gateway_bodies():
        assert all(0 < len(value) <= GATEWAY_MAX for value in body["params"].values()), body
    readable = [router.proc.logs(), router.http.get("/api/v1/channels").text]
    readable += [router.http.get(f"/api/v1/notifications/{n['id']}").text for n in notifications(router)]
    readable += [str(b) for b in v.gateway_bodies()] + [m.as_string() for m in v.mails()]
    for secret in SECRETS:
        assert not any(secret in text for text in readable), "a secret leaked"


def by_channel(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Deliveries per channel, oldest first."""
    return {c: sorted((r for r in rows if r["channel"] == c), key=lambda r: r["id"]) for c in CHANNELS}


def test_a_node_incident_fires_grows_and_resolves_on_every_channel(
    store: Store, start_router: Callable[..., Router], vendors: Vendors, tmp_path: Path
) -> None:
    router = start(start_router, store, tmp_path, rules(vendors))
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=5)
    first = [labels(7, g, rack=HOSTILE_RACK) for g in (0, 1, 2, 3)]
    grown = [*first, *(labels(7, g, rack=HOSTILE_RACK) for g in (5, 7))]

    post(router, [webhook_alert(lab, starts_at=since) for lab in first])
    received(router, vendors, 1, "the firing message")
    post(router, [webhook_alert(lab, starts_at=since) for lab in grown])  # after the group interval: an update
    received(router, vendors, 2, "the update")
    ended = datetime.now(UTC).replace(microsecond=0)
    post(router, [webhook_alert(lab, starts_at=since, ends_at=ended) for lab in grown])
    received(router, vendors, 3, "the resolved message")
    rows = by_channel(settled(router))

    for channel, done in rows.items():
        assert [(r["kind"], r["status"], r["attempts"]) for r in done] == [
            ("firing", "sent", 1),
            ("update", "sent", 1),
            ("resolved", "sent", 1),
        ], channel
    (incident,) = {r["incident_id"] for done in rows.values() for r in done}
    link = f"{EXTERNAL}/incidents/{incident}"
    headlines = [f"gpu-node-07: GPUHighTemp on {gpus} GPUs" for gpus in ("4/8", "6/8", "6/8")]
    assert vendors.counts() == (3, 3, 3, 3)

    # Template variables, as each provider's template names them and within its length.
    # (a resolved message's severity reads "resolved", so the last SMS does not repeat the page)
    levels = ("critical", "critical", "resolved")
    assert vendors.aliyun_params() == [
        {"level": level, "alert": cut(h, ALIYUN_MAX), "host": "gpu-node-07", "gpus": gpus, "n": "1"}
        for level, h, gpus in zip(levels, headlines, ("4/8", "6/8", "6/8"), strict=True)
    ]
    # 12 and 20 characters hold no node before the alert name: the alert name whole (channels/headline.py)
    assert vendors.tencent_params() == [
        [level, "GPUHighTemp", gpus, "1"] for level, gpus in zip(levels, ("4/8", "6/8", "6/8"), strict=True)
    ]
    bodies = vendors.gateway_bodies()
    assert [b["params"] for b in bodies] == [
        {"headline": "GPUHighTemp", "gpus": gpus, "node": "gpu-node-07", "incidents": "1"}
        for gpus in ("4/8", "6/8", "6/8")
    ]
    texts = [b["text"] for b in bodies]
    assert texts[0].startswith(f"[CRITICAL] {headlines[0]}, region north")
    assert "update: more alerts joined" in texts[1]
    assert texts[2].startswith(f"[RESOLVED] {headlines[2]}")
    assert all(t.endswith(f" {link}") for t in texts), texts
    assert not any("/a/" in t for t in texts), "acknowledge/silence links never go in an SMS"

    # Email: one multipart message per kind, to the channel's recipients, the hostile rack escaped.
    mails = vendors.mails()
    assert [subject(m) for m in mails] == [
        f"[CRITICAL] {headlines[0]}",
        f"[CRITICAL] {headlines[1]}",
        f"[RESOLVED] {headlines[2]}",
    ]
    for mail, gpus in zip(mails, ("4/8 ■■■■□□□□", "6/8 ■■■■□■□■", "6/8 ■■■■□■□■"), strict=True):
        assert mail["To"] == ", ".join(MAIL_TO)
        assert mail["From"] == "alertrouter <alertrouter@example.com>"
        text, html = parts(mail)
        assert f"GPUs: {gpus}" in text
        assert link in text
        assert f'<a href="{link}"' in html
        assert f"rack {HOSTILE_RACK}" in text  # plain text is shown as text
        assert "rack r12 &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;b&gt;" in html
        assert "<script>" not in html
        assert "<b>," not in html
    assert "Update: more alerts joined" in parts(mails[1])[0]
    assert "Lasted:" in parts(mails[2])[0]
    assert "/a/" in parts(mails[0])[1]  # acknowledge and silence buttons while it fires ...
    assert "/a/" not in parts(mails[2])[1]  # ... not once it resolved
    assert_sms_fits_and_secret_free(vendors, router)


def test_a_storm_is_one_cluster_message_with_its_gpu_count_on_every_channel(
    store: Store, start_router: Callable[..., Router], vendors: Vendors, tmp_path: Path
) -> None:
    """The SMS fields of a cluster message once took len() of its GPU count, an int: every storm SMS
    failed with a TypeError and became a dead letter after 5 tries, while chat and email went out."""
    rollup = "{threshold: 3, window: 1m, by: [alertname, region], scope_labels: [region, rack]}"
    router = start(start_router, store, tmp_path, rules(vendors, rollup=rollup))
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)

    def node(n: int, gpus: tuple[int, ...]) -> list[dict[str, Any]]:
        return [fallen_off_the_bus(labels(n, g, alertname="GPUFallenOffBus", rack="r12"), since) for g in gpus]

    storm = [alert for n in (11, 12, 13, 14) for alert in node(n, (2, 6))]
    post(router, storm)
    received(router, vendors, 1, "the storm's cluster message")
    storm += node(15, (0, 1, 4))  # a fifth node joins: the cluster incident's update
    post(router, storm)
    received(router, vendors, 2, "the cluster update")
    rows = by_channel(settled(router))

    for channel, done in rows.items():
        assert [(r["kind"], r["status"], r["attempts"], r["unexpected_failures"]) for r in done] == [
            ("cluster", "sent", 1, 0),
            ("cluster", "sent", 1, 0),
        ], channel
    (incident,) = {r["incident_id"] for done in rows.values() for r in done}
    headlines = [
        "GPUFallenOffBus on 4 nodes in region north, rack r12: 8 GPUs",
        "GPUFallenOffBus on 5 nodes in region north, rack r12: 11 GPUs",
    ]
    assert vendors.counts() == (2, 2, 2, 2)
    # the storm's GPU count, not "n/8"; a cluster has no one node
    assert vendors.aliyun_params() == [
        {"level": "critical", "alert": cut(h, ALIYUN_MAX), "host": "-", "gpus": gpus, "n": "1"}
        for h, gpus in zip(headlines, ("8", "11"), strict=True)
    ]
    assert vendors.tencent_params() == [["critical", cut(headlines[0], TENCENT_MAX), gpus, "1"] for gpus in ("8", "11")]
    bodies = vendors.gateway_bodies()
    assert [b["params"]["gpus"] for b in bodies] == ["8", "11"]
    for body, headline in zip(bodies, headlines, strict=True):
        assert body["text"].startswith(f"[CRITICAL] {headline}, since ")
        assert body["text"].endswith(f" {EXTERNAL}/incidents/{incident}")

    mails = vendors.mails()
    assert [subject(m) for m in mails] == [f"[CRITICAL] {h}" for h in headlines]
    text, html = parts(mails[1])
    assert "Storm: 5 nodes rolled up into one incident" in text
    assert "Nodes: 5, GPUs: 11" in text
    for n, gpus in ((11, 2), (12, 2), (13, 2), (14, 2), (15, 3)):
        assert f"- gpu-node-{n}: GPUFallenOffBus on {gpus}/8 GPUs" in text
        assert f">gpu-node-{n}: GPUFallenOffBus on {gpus}/8 GPUs</td>" in html
    assert f'<a href="{EXTERNAL}/incidents/{incident}"' in html
    assert_sms_fits_and_secret_free(vendors, router)


def test_a_short_budget_coalesces_the_backlog_into_one_message_per_channel(
    sqlite_store: Store, start_router: Callable[..., Router], vendors: Vendors, tmp_path: Path
) -> None:
    # four nodes' first messages are due at once; each channel may send one message per 3 seconds
    text = rules(vendors, rate="{messages: 1, per: 3s, block: 3s}")
    router = start(start_router, sqlite_store, tmp_path, text)
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    post(router, [fallen_off_the_bus(labels(n, 3, alertname="GPUXidError"), since) for n in (21, 22, 23, 24)])
    received(router, vendors, 1, "the coalesced message")
    rows = by_channel(settled(router))

    assert vendors.counts() == (1, 1, 1, 1)
    for channel, done in rows.items():
        (parent,) = [r for r in done if r["kind"] == "coalesced"]
        assert (parent["status"], parent["attempts"]) == ("sent", 1), channel
        members = [r for r in done if r is not parent]
        assert sorted(r["incident_key"] for r in members) == [
            f'gpu-by-node{{alertname="GPUXidError",node="gpu-node-{n}"}}' for n in (21, 22, 23, 24)
        ]
        assert {(r["kind"], r["status"], r["parent_id"]) for r in members} == {("firing", "coalesced", parent["id"])}

    headlines = [f"gpu-node-{n}: GPUXidError on 1/8 GPUs" for n in (21, 22, 23, 24)]
    # the variables of the worst (here: the first) notification, and how many were merged
    (params,) = vendors.aliyun_params()
    assert params["alert"] in {cut(h, ALIYUN_MAX) for h in headlines}
    assert (params["level"], params["gpus"], params["n"]) == ("critical", "1/8", "4")
    ((level, _, gpus, merged),) = vendors.tencent_params()
    assert (level, gpus, merged) == ("critical", "1/8", "4")
    (body,) = vendors.gateway_bodies()
    assert body["params"]["incidents"] == "4"
    assert body["text"].startswith("[CRITICAL] 4 notifications (4 critical), worst: gpu-node-2")
    assert body["text"].endswith(f" {EXTERNAL}/incidents?status=firing")

    (mail,) = vendors.mails()
    assert subject(mail) == "4 notifications: 4 critical"
    text, html = parts(mail)
    for headline in headlines:
        assert f"- [CRITICAL] {headline}" in text
        assert f">{headline}</td>" in html
    assert f'<a href="{EXTERNAL}/incidents?status=firing"' in html
    assert_sms_fits_and_secret_free(vendors, router)


def test_a_gateway_s_rate_limit_blocks_it_and_its_backlog_goes_out_coalesced(
    sqlite_store: Store, start_router: Callable[..., Router], vendors: Vendors, tmp_path: Path
) -> None:
    router = start(start_router, sqlite_store, tmp_path, rules(vendors, rate="{messages: 20, per: 1m, block: 4s}"))
    since = datetime.now(UTC).replace(microsecond=0) - timedelta(minutes=1)
    vendors.gateway.fail_next("429")  # the gateway's answer for a number over its rate
    post(router, [fallen_off_the_bus(labels(n, 0, alertname="GPUXidError"), since) for n in (31, 32, 33)])

    # the other channels are not held back by the gateway's block: three messages each
    wait_for(lambda: vendors.counts() == (3, 3, 1, 3), what="three messages, and one for the gateway", timeout=30)
    rows = by_channel(settled(router))
    assert [(r["kind"], r["status"]) for r in rows["sms-aliyun"]] == [("firing", "sent")] * 3
    (parent,) = [r for r in rows["sms-gateway"] if r["kind"] == "coalesced"]
    assert (parent["status"], parent["attempts"]) == ("sent", 1)
    members = sorted((r for r in rows["sms-gateway"] if r is not parent), key=lambda r: -r["attempts"])
    assert [(r["status"], r["attempts"], r["parent_id"]) for r in members] == [
        ("coalesced", 1, parent["id"]),  # refused, then held with the others until the block ended
        ("coalesced", 0, parent["id"]),
        ("coalesced", 0, parent["id"]),
    ]
    assert members[0]["last_error"] == "sms gateway: HTTP 429"

    (body,) = vendors.gateway_bodies()
    assert body["params"]["incidents"] == "3"
    assert body["text"].startswith("[CRITICAL] 3 notifications (3 critical), worst: gpu-node-3")
    assert router.metric("alertrouter_channel_rate_limited_total", channel="sms-gateway", by="vendor") == 1
    assert len(vendors.gateway.received) == 2
    assert len(vendors.refused()) == 1  # the 429; every other request passed every check of its fake
    assert_sms_fits_and_secret_free(vendors, router)
