"""The cluster in a box (issue 12 §2): a simulated fleet, the real Prometheus, an Alertmanager HA pair and two
alertrouter replicas on one PostgreSQL database, delivering to vendor fakes. Everything on 127.0.0.1.

    fleet (tests/cluster/fleet.py: node-exporter + dcgm-exporter per node, one HTTP server)
      <- scraped every 1s by Debian's prometheus (rules/prometheus/*.rules.yml, `for:` shortened)
      -> alerts to both Alertmanagers (prometheus-alertmanager, gossiping as a cluster)
      -> webhooks to both alertrouter replicas (`alertrouter serve`, one PostgreSQL database, rules/)
      -> FakeDingTalk, FakeWeCom, FakeAliyunSms, FakeTencentVoice, FakeSmtp (tests/support/fakes)

What is changed from what ships, and nothing else:
- Prometheus: `scrape_interval` and `evaluation_interval` 1s, and in copies of the shipped rule files every
  rule's `for: <duration>` becomes `for: 2s` (`shorten_for`, line-wise: expressions, labels and
  annotations stay byte for byte), so NodeDown fires in seconds, not after a minute. With `for:` that short,
  `--rules.alert.for-grace-period=1s` (10m by default) keeps Prometheus restoring the `for` state of firing
  alerts after a restart (ALERTS_FOR_STATE), as it does in production for rules whose `for` is 10m or more.
- Scrape targets: every exporter is `127.0.0.1:<fleet port>` with its own `__metrics_path__`. A loopback
  address cannot look like a node, so each target carries the `instance` label it would have in a real
  bare-metal fleet (`10.0.0.7:9100` for node-exporter, `10.0.0.7:9400` for dcgm-exporter) as a static
  target label; Prometheus keeps an `instance` set before relabelling instead of copying `__address__`.
  Jobs are named `node` and `dcgm`, as the shipped rules expect (`up{job="node"}`). No `node` label is
  added (rules/deploy/prometheus.yml adds one): the box checks the harder way, that a NodeDown named by
  `nodename` (node_uname_info) meets GPU alerts named by `Hostname`/`hostname` with no relabelling.
- Alertmanager: the recommended config (docs/en/getting-started.md: one catch-all route, `send_resolved`,
  Bearer token from a `credentials_file`, no inhibit rules, the `Watchdog` route re-sending alertrouter's
  heartbeat every minute), with `group_wait` 1s and `group_interval` 2s. The receiver has one
  `webhook_configs` entry per alertrouter replica, the loopback equivalent of a Service in front of both:
  HA peers must run identical configs for their notification log to deduplicate (so "AM 1 -> replica 1,
  AM 2 -> replica 2" is out), and with no load balancer on loopback each replica receives every webhook,
  which is also the harder case for idempotent ingest on one database.
- alertrouter: the shipped rules/ (copied), where only the channel endpoints point at the fakes
  (`point_channels`: a `url:`/`endpoint:`/`port:` line inserted per channel); tokens, keys, phone numbers and
  SMTP credentials come from the environment, as in production (`vendor_env`). With
  `ClusterBox(group_interval=...)` every `group_interval:` line is shortened too (`shorten_group_interval`),
  for scenarios that wait for a second message (a resolve) to the same receiver.
- A node's `target_labels` (fleet.py) are added to its scrape targets, after the `instance` above (a node may
  replace it): a `region`, or the Kubernetes shape (pod IP `instance`, `pod`, the ServiceMonitor's `job`).

`ClusterBox` starts it all (`with ClusterBox(nodes=12) as box:`) and stops every process at the end. Scenarios
that break the chain on purpose use its small methods: `leader()` (the replica holding the engine lease, read
from the store), `kill_router()` (SIGKILL), `restart_router()` (a new `serve` on the same port, so both
Alertmanagers' webhook URLs still reach it) and `restart_prometheus()` (same TSDB directory, config and port).
"""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import yaml

from cluster.fleet import Fleet
from e2e.harness import TOKEN, Router, Store, launch_router, read_metric
from support import pg
from support.fakes.aliyun import FakeAliyunSms
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.smtp import FakeSmtp, self_signed_cert
from support.fakes.tencent_voice import FakeTencentVoice
from support.fakes.wecom import FakeWeCom
from support.procs import ALERTMANAGER, REPO, Proc, free_port, start_alertrouter

__all__ = [
    "PROMETHEUS",
    "ClusterBox",
    "Vendors",
    "alertmanager_config",
    "point_channels",
    "prometheus_config",
    "shorten_for",
    "shorten_group_interval",
    "shorten_heartbeat_timeout",
    "speak",
    "vendor_env",
]

PROMETHEUS = shutil.which("prometheus")
ENGINE_LEASE = "engine"  # alertrouter/engine/runner.py's lease name
EXTERNAL_URL = "http://alertrouter.box.test"  # links in messages; never opened
FOR = "2s"  # every `for:` of the shipped Prometheus rules, in the box

# Literal test credentials, nothing real. Names are the shipped rules/channels.yml's variables.
DINGTALK_CORE, DINGTALK_CORE_SECRET = "dt-core-box-51c2", "SECbox0c0re5ecret"
DINGTALK_BACKUP, DINGTALK_OPS = "dt-core-backup-box-7e01", "dt-ops-box-3a9d"
DINGTALK_NORTH, DINGTALK_SOUTH = "dt-north-box-4c17", "dt-south-box-9d20"
WECOM_KEY = "wecom-core-box-8b6f"
ALIYUN_ID, ALIYUN_SECRET = "LTAI5tBoxKeyId0012", "aliyun-box-Secret/+*~12"
SMS_SIGN, SMS_TEMPLATE, ONCALL_PHONE = "GPU告警", "SMS_480000012", "13800138012"
ONCALL_PHONE_NORTH, ONCALL_PHONE_SOUTH = "13800138013", "13800138014"
SMTP_USER, SMTP_PASSWORD, OPS_EMAIL = "alertrouter", "smtp-box-Pa55word", "gpu-ops@example.com"


@dataclass
class Vendors:
    """The fakes, strict like the real services: each checks credentials, signatures and shapes."""

    dingtalk: FakeDingTalk
    wecom: FakeWeCom
    aliyun: FakeAliyunSms
    smtp: FakeSmtp
    tencent: FakeTencentVoice  # the voice channel's; it has no credentials here, so any request is a mistake

    def refused(self) -> list[str]:
        """Every request a fake refused (an error code, a bad signature, a variable too long)."""
        bad = [f"dingtalk: {r.body[:200]!r}" for r in self.dingtalk.refused]
        bad += [f"wecom: {r.body[:200]!r}" for r in self.wecom.refused]
        bad += [f"aliyun: {r.body[:200]!r}" for r in self.aliyun.refused]
        bad += [f"tencent: {r.body[:200]!r}" for r in self.tencent.received]
        return bad + [f"smtp: {self.smtp.failed_logins} failed logins"] * bool(self.smtp.failed_logins)


_RULE = re.compile(r"^( *)- (?:alert|record):")
_FOR = re.compile(r"^( *)for:( *)[^\s#]+(.*)$")


def is_digest(mail: EmailMessage) -> bool:
    """The weekly digest (a fresh install sends one), in whatever language the rules write it: its Message-ID
    is `<alertrouter-digest.WEEK.RECEIVER@domain>` (alertrouter.digest.send), its subject is worded."""
    return str(mail.get("Message-ID", "")).startswith("<alertrouter-digest.")


def shorten_for(rules_yaml: str, duration: str = FOR) -> str:
    """The rule file with every rule's `for:` set to `duration`; every other byte as it was.

    Only a `for:` line at the indentation of its rule's keys is a rule's `for` (a block scalar's lines are
    indented deeper than its key, so an annotation or expression that says "for: 5m" is left alone). The
    result is checked against the parsed file: a layout this cannot handle (flow-style rules) fails loudly.
    """
    out: list[str] = []
    keys: int | None = None  # indentation of the keys of the rule being read
    for line in rules_yaml.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        indent = len(body) - len(body.lstrip(" "))
        if rule := _RULE.match(body):
            keys = len(rule.group(1)) + 2
        elif keys is not None and body.strip() and indent < keys:
            keys = None  # out of the rule
        found = _FOR.match(body)
        if found is not None and keys is not None and len(found.group(1)) == keys:
            line = f"{found.group(1)}for:{found.group(2) or ' '}{duration}{found.group(3)}{line[len(body) :]}"
        out.append(line)
    text = "".join(out)
    expected = yaml.safe_load(rules_yaml)
    for group in expected.get("groups") or []:
        for rule in group.get("rules") or []:
            if "for" in rule:
                rule["for"] = duration
    if yaml.safe_load(text) != expected:
        raise ValueError("shorten_for: a `for:` this line-wise edit cannot reach (flow-style rule?)")
    return text


def shorten_heartbeat_timeout(rules_yaml: str, duration: str) -> str:
    """Every heartbeat's `timeout: <duration>` line of rules/heartbeats.yml becomes `timeout: <duration>`."""
    return re.sub(r"(?m)^(\s+)timeout: \S+(\s*(#.*)?)$", rf"\g<1>timeout: {duration}\g<2>", rules_yaml)


def shorten_group_interval(rules_yaml: str, duration: str) -> str:
    """Every `group_interval: <duration>` line of an alertrouter rule file (routes.yml, aggregation.yml) becomes
    `group_interval: <duration>`, comments kept; nothing else changes."""
    return re.sub(r"(?m)^(\s+)group_interval: \S+(\s*(#.*)?)$", rf"\g<1>group_interval: {duration}\g<2>", rules_yaml)


WARNING_RECEIVERS = ("ops", "ops-north", "ops-south")  # rules/routes.yml's receivers of warnings


def speak(routes_yaml: str, receivers: tuple[str, ...], language: str, timezone: str) -> str:
    """routes.yml with `language:` and `timezone:` lines added to each named receiver (a team abroad, as
    rules/alertrouter.yml's comment describes), everything else as shipped. Checked against the parsed file."""
    out: list[str] = []
    lines = routes_yaml.splitlines()
    for line in lines:
        out.append(line)
        found = re.match(r"^( *)- name: (\S+)\s*$", line)
        if found is not None and found.group(2) in receivers:
            indent = " " * (len(found.group(1)) + 2)
            out += [f"{indent}language: {language}", f"{indent}timezone: {timezone}"]
    text = "\n".join(out) + "\n"
    spoken = {r["name"] for r in yaml.safe_load(text)["receivers"] if r.get("language") == language}
    if spoken != set(receivers):
        raise AssertionError(f"speak: receivers {sorted(set(receivers) - spoken)} not found in routes.yml")
    return text


def point_channels(channels_yaml: str, *, dingtalk: str, wecom: str, aliyun: str, smtp_port: int, tencent: str) -> str:
    """The shipped channels.yml with each channel's endpoint pointed at a fake: one line inserted per channel
    (`url:` for DingTalk and WeCom, `endpoint:` in `aliyun:` and `tencent:`, `port:` for email), everything
    else as shipped."""
    insert = {
        "type: dingtalk": f"url: {dingtalk}/robot/send",
        "type: wecom": f"url: {wecom}/cgi-bin/webhook/send",
        "type: email": f"port: {smtp_port}",
        "aliyun:": f"  endpoint: {aliyun}/",
        "tencent:": f"  endpoint: {tencent}/",
    }
    out: list[str] = []
    for line in channels_yaml.splitlines():
        out.append(line)
        stripped = line.strip()
        if stripped in insert:
            out.append(" " * (len(line) - len(line.lstrip())) + insert[stripped])
    text = "\n".join(out) + "\n"
    fakes = {insert["type: dingtalk"][5:], insert["type: wecom"][5:], f"{aliyun}/", f"{tencent}/", smtp_port}
    for channel in yaml.safe_load(text)["channels"]:  # every channel the shipped file has is redirected
        where = channel.get("aliyun") or channel.get("tencent") or channel
        pointed = [where[key] for key in ("url", "endpoint", "port") if key in where]
        if not pointed or not set(pointed) <= fakes:
            raise AssertionError(f"channel {channel['name']} not pointed at a fake: {pointed}")
    return text


def vendor_env(smtp: FakeSmtp) -> dict[str, str]:
    """The environment of the shipped rules/channels.yml and routes.yml, pointing at the fakes."""
    return {
        "DINGTALK_CORE_TOKEN": DINGTALK_CORE,
        "DINGTALK_CORE_SECRET": DINGTALK_CORE_SECRET,
        "DINGTALK_CORE_BACKUP_TOKEN": DINGTALK_BACKUP,
        "DINGTALK_OPS_TOKEN": DINGTALK_OPS,
        "DINGTALK_NORTH_TOKEN": DINGTALK_NORTH,
        "DINGTALK_SOUTH_TOKEN": DINGTALK_SOUTH,
        "WECOM_CORE_KEY": WECOM_KEY,
        "ALIYUN_SMS_ACCESS_KEY_ID": ALIYUN_ID,
        "ALIYUN_SMS_ACCESS_KEY_SECRET": ALIYUN_SECRET,
        "ALIYUN_SMS_SIGN_NAME": SMS_SIGN,
        "ALIYUN_SMS_TEMPLATE_CODE": SMS_TEMPLATE,
        "ONCALL_PHONE": ONCALL_PHONE,
        # with SMS credentials set, serve refuses a critical-north/-south receiver without its numbers
        "ONCALL_PHONE_NORTH": ONCALL_PHONE_NORTH,
        "ONCALL_PHONE_SOUTH": ONCALL_PHONE_SOUTH,
        "SMTP_HOST": smtp.host,
        "SMTP_USERNAME": SMTP_USER,
        "SMTP_PASSWORD": SMTP_PASSWORD,
        "OPS_EMAIL": OPS_EMAIL,
        # the fake's throwaway certificate is the only CA alertrouter trusts: STARTTLS verifies as shipped
        "SSL_CERT_FILE": str(smtp.tls.cert) if smtp.tls else "",
    }


def prometheus_config(fleet: Fleet, alertmanagers: list[str]) -> dict[str, Any]:
    def job(name: str, exporter: str, port: int) -> dict[str, Any]:
        groups = [
            {
                "targets": [fleet.address_of(node)],
                "labels": {
                    "__metrics_path__": path,
                    "instance": f"{node.ip}:{port}",
                    **node.target_labels.get(exporter, {}),  # a region, a pod IP instance, a relabelled node
                },
            }
            for node, path in fleet.targets(exporter)
        ]
        return {"job_name": name, "scrape_timeout": "1s", "static_configs": groups}

    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["rules/*.rules.yml"],
        "alerting": {"alertmanagers": [{"api_version": "v2", "static_configs": [{"targets": alertmanagers}]}]},
        "scrape_configs": [job("node", "node-exporter", 9100), job("dcgm", "dcgm-exporter", 9400)],
    }


def alertmanager_config(router_urls: list[str], token_file: Path, *, watchdog_repeat: str = "1m") -> dict[str, Any]:
    """docs/en/getting-started.md's Alertmanager config, with short waits and one webhook per replica; the
    Watchdog (alertrouter's heartbeat of this Prometheus and the pair) re-sent every `watchdog_repeat`, as the shipped
    rules/deploy/alertmanager.yml re-sends it every minute."""
    return {
        "route": {
            "receiver": "alertrouter",
            "group_by": ["alertname", "Hostname", "instance"],
            "group_wait": "1s",
            "group_interval": "2s",
            "repeat_interval": "4h",
            "routes": [
                {
                    "matchers": ['alertname="Watchdog"'],
                    "receiver": "alertrouter",
                    "group_wait": "0s",
                    "group_interval": "1s",
                    "repeat_interval": watchdog_repeat,
                }
            ],
        },
        "receivers": [
            {
                "name": "alertrouter",
                "webhook_configs": [
                    {
                        "url": f"{url}/webhook/alertmanager",
                        "send_resolved": True,
                        "http_config": {"authorization": {"credentials_file": str(token_file)}},
                    }
                    for url in router_urls
                ],
            }
        ],
    }


def _start(name: str, args: list[str], workdir: Path, url: str, ready: str) -> Proc:
    log = workdir / f"{name}.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=workdir)
    proc = Proc(name, popen, url, log)
    try:
        proc.wait_ready(ready)
    except BaseException:
        proc.stop()
        raise
    return proc


class ClusterBox:
    """The whole chain, started by `__enter__` in dependency order and stopped in reverse by `__exit__`.

    `workdir` keeps every config and log (a temporary directory unless given); `keep_database=True` leaves
    the PostgreSQL database in place for a look afterwards (its name is `store.pg_name`). `fleet` replaces
    the plain `Fleet(nodes)` (own listeners, target labels); `group_interval` shortens alertrouter's shipped
    `group_interval`s (5m) for scenarios that wait for a second message, as `for:` is shortened.
    `warnings_in=(language, timezone)` gives the receivers of warnings (`WARNING_RECEIVERS`) their own
    language and zone (`speak`), so one run tells the critical on-call team in the shipped zh-CN and
    Asia/Shanghai and the warning team in another language and zone: both languages through the whole chain.
    `heartbeat_timeout` shortens the shipped heartbeats' `timeout:` (5m), `watchdog_repeat` is the Watchdog
    route's `repeat_interval` in Alertmanager (1m as shipped), and `resend_delay` Prometheus'
    `--rules.alert.resend-delay` (1m by default; an alert it stops sending ends 4 resend delays later), for
    scenarios where a source falls silent.
    """

    def __init__(
        self,
        *,
        nodes: int,
        workdir: Path | None = None,
        keep_database: bool = False,
        fleet: Fleet | None = None,
        group_interval: str | None = None,
        heartbeat_timeout: str | None = None,
        watchdog_repeat: str = "1m",
        resend_delay: str | None = None,
        warnings_in: tuple[str, str] | None = None,
    ) -> None:
        self.fleet = fleet or Fleet(nodes)
        assert len(self.fleet.nodes) == nodes
        self.workdir = workdir
        self.keep_database = keep_database
        self.group_interval = group_interval
        self.heartbeat_timeout = heartbeat_timeout
        self.watchdog_repeat = watchdog_repeat
        self.resend_delay = resend_delay
        self.warnings_in = warnings_in
        self.prometheus: Proc
        self.alertmanagers: list[Proc] = []
        self.routers: list[Router] = []
        self.vendors: Vendors
        self.store: Store
        self._stack = ExitStack()
        self._router_env: dict[str, str] = {}
        self._prometheus_args: list[str] = []

    def __enter__(self) -> ClusterBox:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def _start(self) -> None:
        if PROMETHEUS is None or ALERTMANAGER is None:
            raise RuntimeError("prometheus and prometheus-alertmanager are needed (bash .ci/setup installs them)")
        problem = pg.available()
        if problem is not None:
            raise RuntimeError(problem)
        stack = self._stack
        if self.workdir is None:
            self.workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cluster-box-")))
        work = self.workdir
        stack.enter_context(self.fleet)

        smtp = FakeSmtp(security="starttls", users={SMTP_USER: SMTP_PASSWORD}, tls=self_signed_cert(work))
        self.vendors = Vendors(
            dingtalk=FakeDingTalk(
                {
                    DINGTALK_CORE: DINGTALK_CORE_SECRET,
                    DINGTALK_BACKUP: None,
                    DINGTALK_OPS: None,
                    DINGTALK_NORTH: None,
                    DINGTALK_SOUTH: None,
                }
            ),
            wecom=FakeWeCom([WECOM_KEY]),
            aliyun=FakeAliyunSms(
                {ALIYUN_ID: ALIYUN_SECRET},
                sign_names=(SMS_SIGN,),
                templates={SMS_TEMPLATE: ("severity", "node", "alert", "gpus")},  # channels.yml's params
                param_limit=20,  # channels.yml's param_max_length
            ),
            smtp=smtp,
            tencent=FakeTencentVoice({}),
        )
        for fake in (self.vendors.dingtalk, self.vendors.wecom, self.vendors.aliyun, self.vendors.tencent, smtp):
            fake.start()
            stack.callback(fake.stop)

        # alertrouter x 2 on one fresh PostgreSQL database
        name = pg.create_database("alertrouter_box")
        self.store = Store("postgresql", pg.url_for(name), pg_name=name)
        if not self.keep_database:
            stack.callback(pg.drop_database, name)
        rules = work / "alertrouter-rules"
        rules.mkdir()
        for path in sorted((REPO / "rules").glob("*.yml")):
            text = path.read_text()
            if self.group_interval is not None:
                text = shorten_group_interval(text, self.group_interval)
            if self.heartbeat_timeout is not None and path.name == "heartbeats.yml":
                text = shorten_heartbeat_timeout(text, self.heartbeat_timeout)
            if self.warnings_in is not None and path.name == "routes.yml":
                text = speak(text, WARNING_RECEIVERS, *self.warnings_in)
            (rules / path.name).write_text(text)
        v = self.vendors
        (rules / "channels.yml").write_text(
            point_channels(
                (REPO / "rules" / "channels.yml").read_text(),
                dingtalk=v.dingtalk.url,
                wecom=v.wecom.url,
                aliyun=v.aliyun.url,
                smtp_port=smtp.port,
                tencent=v.tencent.url,
            )
        )
        env = {**vendor_env(smtp), "ALERTROUTER_CONFIG": str(rules), "ALERTROUTER_EXTERNAL_URL": EXTERNAL_URL}
        self._router_env = env
        for i in range(2):
            replica = work / f"alertrouter-{i + 1}"
            replica.mkdir()
            router = launch_router(self.store, replica, env)
            self.routers.append(router)

        def close_routers() -> None:  # the replicas of the moment
            for r in reversed(self.routers):
                r.close()

        stack.callback(close_routers)

        # Alertmanager HA pair
        token_file = work / "alertrouter_token"
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o400)
        am_config = work / "alertmanager.yml"
        am_config.write_text(
            yaml.safe_dump(
                alertmanager_config([r.url for r in self.routers], token_file, watchdog_repeat=self.watchdog_repeat)
            )
        )
        web, gossip = [free_port(), free_port()], [free_port(), free_port()]
        for i in range(2):
            am_dir = work / f"alertmanager-{i + 1}"
            am_dir.mkdir()
            args = [
                ALERTMANAGER,
                f"--config.file={am_config}",
                f"--storage.path={am_dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{web[i]}",
                f"--cluster.listen-address=127.0.0.1:{gossip[i]}",
                f"--cluster.advertise-address=127.0.0.1:{gossip[i]}",
                f"--cluster.peer=127.0.0.1:{gossip[1 - i]}",
            ]
            am = _start(f"alertmanager-{i + 1}", args, am_dir, f"http://127.0.0.1:{web[i]}", "/-/ready")
            self.alertmanagers.append(am)
            stack.callback(am.stop)

        # Prometheus
        prom_dir = work / "prometheus"
        (prom_dir / "rules").mkdir(parents=True)
        for path in sorted((REPO / "rules" / "prometheus").glob("*.rules.yml")):
            (prom_dir / "rules" / path.name).write_text(shorten_for(path.read_text()))
        config = prometheus_config(self.fleet, [f"127.0.0.1:{p}" for p in web])
        (prom_dir / "prometheus.yml").write_text(yaml.safe_dump(config, sort_keys=False))
        port = free_port()
        self._prometheus_args = [
            PROMETHEUS,
            f"--config.file={prom_dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={prom_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            # restore the `for` state of firing alerts after a restart (ALERTS_FOR_STATE) as production
            # does for its long rules: Prometheus skips restoring rules whose `for` is under this (10m
            # by default), and every `for:` in the box is 2s
            "--rules.alert.for-grace-period=1s",
        ]
        if self.resend_delay is not None:
            # how often firing alerts are sent again, and so (x4) their endsAt: how long the Alertmanagers
            # keep one firing after Prometheus stops (1m, so 4m, by default)
            self._prometheus_args.append(f"--rules.alert.resend-delay={self.resend_delay}")
        self.prometheus = _start("prometheus", self._prometheus_args, prom_dir, f"http://127.0.0.1:{port}", "/-/ready")
        stack.callback(lambda: self.prometheus.stop())  # the Prometheus of the moment (see restart_prometheus)

    # -- breaking the chain on purpose ---------------------------------------------------------
    def engine_holder(self) -> str | None:
        """The holder of the engine lease as the store has it, while unexpired; None when nobody holds it."""

        async def read() -> str | None:
            conn = await asyncpg.connect(self.store.url.replace("postgresql+asyncpg://", "postgresql://"), timeout=5)
            try:
                row = await conn.fetchrow(
                    "SELECT holder FROM leases WHERE name = $1 AND expires_at > now() AT TIME ZONE 'UTC'",
                    ENGINE_LEASE,
                )
            finally:
                await conn.close()
            return None if row is None else str(row["holder"])

        return asyncio.run(read())

    def leader(self) -> Router | None:
        """The running replica that holds the engine lease: the store names a holder (host and a random part),
        and the replica that took it said so in its log ("engine lease taken by <holder>")."""
        holder = self.engine_holder()
        if holder is None:
            return None
        found = [r for r in self.routers if r.proc.popen.poll() is None and f"lease taken by {holder}" in r.proc.logs()]
        return found[0] if len(found) == 1 else None

    def kill_router(self, router: Router) -> None:
        """SIGKILL a replica: no shutdown, no lease released, no claim finished; its port closes."""
        router.proc.kill9()
        router.http.close()

    def restart_router(self, router: Router) -> Router:
        """Start `alertrouter serve` again in place of a stopped (or killed) replica: same port, so both
        Alertmanagers' webhook URLs reach it again, same database, rules and environment; its log goes on."""
        assert router.proc.popen.poll() is not None, "stop or kill the replica first"
        port = int(router.url.rsplit(":", 1)[1])
        proc = start_alertrouter(
            router.proc.log.parent,
            database_url=self.store.url,
            env={"ALERTROUTER_BEARER_TOKEN": TOKEN, **self._router_env},
            port=port,
        )
        fresh = Router(proc)
        self.routers[self.routers.index(router)] = fresh
        return fresh

    def restart_prometheus(self) -> float:
        """Stop Prometheus (SIGTERM: a clean shutdown, as a rollout does) and start it again with the same
        config, TSDB directory and port, waiting until it is ready. Its log goes on in the same file.

        Returns the moment (Unix time) the old one had exited: every sample it wrote is at or before it, and
        the new one writes none before it is started."""
        old = self.prometheus
        code = old.stop()
        stopped = time.time()
        assert code == 0, f"prometheus did not stop cleanly on SIGTERM (exit {code}):\n{old.logs()[-4000:]}"
        self.prometheus = _start("prometheus", self._prometheus_args, old.log.parent, old.url, "/-/ready")
        return stopped

    # -- reading the chain ---------------------------------------------------------------------
    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        """Prometheus's instant query result for `expr`, now or at Unix time `at`."""
        params: dict[str, Any] = {"query": expr} if at is None else {"query": expr, "time": at}
        r = httpx.get(self.prometheus.url + "/api/v1/query", params=params, timeout=10)
        assert r.status_code == 200, r.text
        result: list[dict[str, Any]] = r.json()["data"]["result"]
        return result

    def prometheus_metric(self, name: str, **labels: str) -> float:
        """A metric of Prometheus itself (summed over the samples matching `labels`), 0 before its first sample."""
        r = httpx.get(self.prometheus.url + "/metrics", timeout=10)
        assert r.status_code == 200, r.text
        return read_metric(r.text, name, **labels)

    def prometheus_alerts(self) -> list[dict[str, Any]]:
        r = httpx.get(self.prometheus.url + "/api/v1/alerts", timeout=10)
        assert r.status_code == 200, r.text
        alerts: list[dict[str, Any]] = r.json()["data"]["alerts"]
        return alerts

    def procs(self) -> Iterator[Proc]:
        yield from (r.proc for r in self.routers)
        yield from self.alertmanagers
        if hasattr(self, "prometheus"):
            yield self.prometheus

    def log_tails(self, chars: int = 4000) -> str:
        return "\n".join(
            f"----- {p.name} {p.url} (exit {p.popen.poll()}) -----\n{p.logs()[-chars:]}" for p in self.procs()
        )
