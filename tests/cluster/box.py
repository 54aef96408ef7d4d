"""The cluster in a box (issue 12 §2): a simulated fleet, the real Prometheus, an Alertmanager HA pair and two
alertrouter replicas on one PostgreSQL database, delivering to vendor fakes. Everything on 127.0.0.1.

    fleet (tests/cluster/fleet.py: node-exporter + dcgm-exporter per node, one HTTP server)
      <- scraped every 1s by Debian's prometheus (rules/prometheus/*.rules.yml, `for:` shortened)
      -> alerts to both Alertmanagers (prometheus-alertmanager, gossiping as a cluster)
      -> webhooks to both alertrouter replicas (`alertrouter serve`, one PostgreSQL database, rules/)
      -> FakeDingTalk, FakeWeCom, FakeAliyunSms, FakeSmtp (tests/support/fakes)

What is changed from what ships, and nothing else:
- Prometheus: `scrape_interval` and `evaluation_interval` 1s, and in copies of the shipped rule files every
  `for: <duration>` becomes `for: 2s` (`shorten_for`, a line-wise regex: expressions, labels and
  annotations stay byte for byte), so NodeDown fires in seconds, not after a minute.
- Scrape targets: every exporter is `127.0.0.1:<fleet port>` with its own `__metrics_path__`. A loopback
  address cannot look like a node, so each target carries the `instance` label it would have in a real
  bare-metal fleet (`10.0.0.7:9100` for node-exporter, `10.0.0.7:9400` for dcgm-exporter) as a static
  target label; Prometheus keeps an `instance` set before relabelling instead of copying `__address__`.
  Jobs are named `node` and `dcgm`, as the shipped rules expect (`up{job="node"}`). No `node` label is
  added (rules/deploy/prometheus.yml adds one): the box checks the harder way, that a NodeDown named by
  `nodename` (node_uname_info) meets GPU alerts named by `Hostname`/`hostname` with no relabelling.
- Alertmanager: the README's recommended config (one catch-all route, `send_resolved`, Bearer token from a
  `credentials_file`, no inhibit rules), with `group_wait` 1s and `group_interval` 2s. The receiver has one
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

`ClusterBox` starts it all (`with ClusterBox(nodes=12) as box:`) and stops every process at the end.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from cluster.fleet import Fleet
from e2e.harness import TOKEN, Router, Store, launch_router
from support import pg
from support.fakes.aliyun import FakeAliyunSms
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.smtp import FakeSmtp, self_signed_cert
from support.fakes.wecom import FakeWeCom
from support.procs import ALERTMANAGER, REPO, Proc, free_port

__all__ = [
    "PROMETHEUS",
    "ClusterBox",
    "Vendors",
    "alertmanager_config",
    "point_channels",
    "prometheus_config",
    "shorten_for",
    "shorten_group_interval",
    "vendor_env",
]

PROMETHEUS = shutil.which("prometheus")
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

    def refused(self) -> list[str]:
        """Every request a fake refused (an error code, a bad signature, a variable too long)."""
        bad = [f"dingtalk: {r.body[:200]!r}" for r in self.dingtalk.received if r not in self.dingtalk.accepted]
        bad += [f"wecom: {r.body[:200]!r}" for r in self.wecom.received if r not in self.wecom.accepted]
        bad += [f"aliyun: {r.body[:200]!r}" for r in self.aliyun.received if r not in self.aliyun.accepted]
        return bad + [f"smtp: {self.smtp.failed_logins} failed logins"] * bool(self.smtp.failed_logins)


def shorten_for(rules_yaml: str, duration: str = FOR) -> str:
    """Every `for: <duration>` line of a Prometheus rule file becomes `for: <duration>`; nothing else changes."""
    return re.sub(r"(?m)^(\s+)for: \S+\s*$", rf"\g<1>for: {duration}", rules_yaml)


def shorten_group_interval(rules_yaml: str, duration: str) -> str:
    """Every `group_interval: <duration>` line of an alertrouter rule file (routes.yml, aggregation.yml) becomes
    `group_interval: <duration>`, comments kept; nothing else changes."""
    return re.sub(r"(?m)^(\s+)group_interval: \S+(\s*(#.*)?)$", rf"\g<1>group_interval: {duration}\g<2>", rules_yaml)


def point_channels(channels_yaml: str, *, dingtalk: str, wecom: str, aliyun: str, smtp_port: int) -> str:
    """The shipped channels.yml with each channel's endpoint pointed at a fake: one line inserted per channel
    (`url:` for DingTalk and WeCom, `endpoint:` in `aliyun:`, `port:` for email), everything else as shipped."""
    insert = {
        "type: dingtalk": f"url: {dingtalk}/robot/send",
        "type: wecom": f"url: {wecom}/cgi-bin/webhook/send",
        "type: email": f"port: {smtp_port}",
        "aliyun:": f"  endpoint: {aliyun}/",
    }
    out: list[str] = []
    for line in channels_yaml.splitlines():
        out.append(line)
        stripped = line.strip()
        if stripped in insert:
            out.append(" " * (len(line) - len(line.lstrip())) + insert[stripped])
    text = "\n".join(out) + "\n"
    for channel in yaml.safe_load(text)["channels"]:  # every channel the shipped file has is redirected
        where = channel.get("aliyun", channel)
        assert {"url", "endpoint", "port"} & set(where), f"channel {channel['name']} not pointed at a fake"
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


def alertmanager_config(router_urls: list[str], token_file: Path) -> dict[str, Any]:
    """README "Pointing Alertmanager at it", with short waits and one webhook per replica."""
    return {
        "route": {
            "receiver": "alertrouter",
            "group_by": ["alertname", "Hostname", "instance"],
            "group_wait": "1s",
            "group_interval": "2s",
            "repeat_interval": "4h",
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
    """

    def __init__(
        self,
        *,
        nodes: int,
        workdir: Path | None = None,
        keep_database: bool = False,
        fleet: Fleet | None = None,
        group_interval: str | None = None,
    ) -> None:
        self.fleet = fleet or Fleet(nodes)
        assert len(self.fleet.nodes) == nodes
        self.workdir = workdir
        self.keep_database = keep_database
        self.group_interval = group_interval
        self.prometheus: Proc
        self.alertmanagers: list[Proc] = []
        self.routers: list[Router] = []
        self.vendors: Vendors
        self.store: Store
        self._stack = ExitStack()

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
        )
        for fake in (self.vendors.dingtalk, self.vendors.wecom, self.vendors.aliyun, smtp):
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
            (rules / path.name).write_text(text)
        v = self.vendors
        (rules / "channels.yml").write_text(
            point_channels(
                (REPO / "rules" / "channels.yml").read_text(),
                dingtalk=v.dingtalk.url,
                wecom=v.wecom.url,
                aliyun=v.aliyun.url,
                smtp_port=smtp.port,
            )
        )
        env = {**vendor_env(smtp), "ALERTROUTER_CONFIG": str(rules), "ALERTROUTER_EXTERNAL_URL": EXTERNAL_URL}
        for i in range(2):
            replica = work / f"alertrouter-{i + 1}"
            replica.mkdir()
            router = launch_router(self.store, replica, env)
            self.routers.append(router)
            stack.callback(router.close)

        # Alertmanager HA pair
        token_file = work / "alertrouter_token"
        token_file.write_text(TOKEN + "\n")
        token_file.chmod(0o400)
        am_config = work / "alertmanager.yml"
        am_config.write_text(yaml.safe_dump(alertmanager_config([r.url for r in self.routers], token_file)))
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
        args = [
            PROMETHEUS,
            f"--config.file={prom_dir / 'prometheus.yml'}",
            f"--storage.tsdb.path={prom_dir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ]
        self.prometheus = _start("prometheus", args, prom_dir, f"http://127.0.0.1:{port}", "/-/ready")
        stack.callback(self.prometheus.stop)

    # -- reading the chain ---------------------------------------------------------------------
    def query(self, expr: str) -> list[dict[str, Any]]:
        """Prometheus's instant query result for `expr`."""
        r = httpx.get(self.prometheus.url + "/api/v1/query", params={"query": expr}, timeout=10)
        assert r.status_code == 200, r.text
        result: list[dict[str, Any]] = r.json()["data"]["result"]
        return result

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
