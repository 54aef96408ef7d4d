"""The compose stack, really run: docker-compose.yml's four services as processes (tests/support/compose.py),
with exactly the files, arguments and environment the compose file gives them, wired on loopback as compose
wires them by name, until an alert of Prometheus's shipped rules reaches a fake DingTalk robot.

    simulated GPU nodes (tests/cluster/fleet.py) behind an HTTP proxy that answers for gpu-node-01, gpu-node-02
      <- scraped by Prometheus: compose's command, rules/deploy/prometheus.yml and rules/prometheus/ as mounted
      -> Alertmanager: compose's command, rules/deploy/alertmanager.yml, the bearer token from the compose secret
      -> alertrouter serve: the Dockerfile's ENTRYPOINT/CMD/ENV, compose's environment, the mounted rules/,
         on a throwaway database of the local PostgreSQL
      -> FakeDingTalk (signature checked), the robot of dingtalk-core

What the test supplies is what an operator supplies: a `.env` (the bearer token, the database password, the
DingTalk robot's token and secret) and the GPU nodes behind the placeholder names. Only two things differ from
the shipped files: rules/channels.yml's DingTalk channels get a `url:` line pointing at the fake (the real
robot is on the internet), and the scrape jobs of the placeholder nodes get a `proxy_url` (those names do not
resolve here). Nothing is shortened: the `for:`-less GPUXidError rule, the shipped 15s/30s scrape and
evaluation intervals, Alertmanager's 10s group_wait and alertrouter's 30s group_wait take their real time
(about a minute and a half).

Not proved here: that the image builds (no Docker engine: tests/deploy/test_dockerfile.py lints the Dockerfile),
the upstream images' versions (Debian's prometheus and prometheus-alertmanager are older), published ports and
restart policies.
"""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import pytest
import yaml

from cluster.fleet import Fleet
from e2e.harness import wait_for
from support import pg
from support.compose import ComposeStack
from support.composefile import CONTAINER_PORTS, PROMETHEUS, ComposeError, drift, interpolate, load_compose
from support.fakes.dingtalk import FakeDingTalk
from support.need import need
from support.procs import ALERTMANAGER, REPO

# Literal test credentials, nothing real.
BEARER = "compose-bearer-2f7c9a41d0e3"
ROBOT_TOKEN, ROBOT_SECRET = "dt-core-compose-6a12", "SECcompose0c0re5ecret"
XID_NODE, XID_GPU, XID = 1, 3, 48  # double-bit ECC: GPUXidError, critical, no `for:`
EXPORTER_PORTS = {9100: "node-exporter", 9400: "dcgm-exporter"}  # rules/deploy/prometheus.yml's jobs
TIMEOUT = 300.0  # scrape (30s) + evaluation (15s) + Alertmanager (10s) + alertrouter (30s), on a loaded machine


# --- the drift checks: fast, no process -----------------------------------------------------------------


def test_the_stand_in_reproduces_everything_the_compose_file_has() -> None:
    assert drift(load_compose()) == []


def test_a_service_or_volume_compose_gains_is_named() -> None:
    compose = load_compose()
    compose["services"]["grafana"] = {"image": "grafana/grafana:11.1.0"}
    compose["services"]["prometheus"]["volumes"].append("grafana-data:/var/lib/grafana")
    compose["services"]["alertmanager"]["volumes"].append("./deploy/alertmanager/templates:/etc/alertmanager/t:ro")
    compose["services"]["alertrouter"]["entrypoint"] = ["sh"]
    assert set(drift(compose)) == {
        "service 'grafana': unknown to tests/support/compose.py",
        "services.alertmanager.volumes: ./deploy/alertmanager/templates is not in the repo",
        "services.prometheus.volumes: 'grafana-data' is neither a repo path nor a named volume",
        "services.alertrouter.entrypoint",
        "services.grafana.image 'grafana/grafana:11.1.0': no program stands in for it",
    }


def test_interpolation_refuses_what_compose_refuses() -> None:
    service = load_compose()["services"]["alertrouter"]["environment"]
    with pytest.raises(ComposeError, match="POSTGRES_PASSWORD"):
        interpolate(service, {"ALERTROUTER_BEARER_TOKEN": BEARER})
    env = interpolate(service, {"ALERTROUTER_BEARER_TOKEN": BEARER, "POSTGRES_PASSWORD": "pw"})
    assert env["ALERTROUTER_LOG_LEVEL"] == "INFO"  # ${ALERTROUTER_LOG_LEVEL:-INFO}
    assert env["ALERTROUTER_DATABASE_URL"] == "postgresql+asyncpg://alertrouter:pw@postgres:5432/alertrouter"
    assert interpolate("a$$b ${X-d} ${X:-e}", {"X": ""}) == "a$b  e"


def test_the_layout_reads_compose_and_fails_on_an_address_it_does_not_know(tmp_path: Path) -> None:
    """prepare() alone (no process): where the files, the token and the addresses land."""
    dot_env = {"ALERTROUTER_BEARER_TOKEN": BEARER, "POSTGRES_PASSWORD": "pw", "DINGTALK_CORE_TOKEN": ROBOT_TOKEN}
    stack = ComposeStack(tmp_path, dot_env, postgres=("127.0.0.1", 5432, "throwaway"), scrape_proxy="http://proxy")
    stack.prepare()
    am, router = stack.services["alertmanager"], stack.services["alertrouter"]
    config = yaml.safe_load(am.path("/etc/alertmanager/alertmanager.yml").read_text())
    (hook,) = config["receivers"][0]["webhook_configs"]
    assert hook["url"] == f"{router.url}/webhook/alertmanager"
    token = Path(hook["http_config"]["authorization"]["credentials_file"])
    assert token == am.path("/etc/alertmanager/alertrouter_token")
    assert token.read_text() == BEARER
    assert oct(token.stat().st_mode & 0o777) == "0o400"
    assert router.env["ALERTROUTER_DATABASE_URL"] == "postgresql+asyncpg://alertrouter:pw@127.0.0.1:5432/throwaway"
    assert router.env["ALERTROUTER_CONFIG"] == str(router.path("/etc/alertrouter/rules"))
    assert router.env["DINGTALK_CORE_TOKEN"] == ROBOT_TOKEN  # passed through, as compose does
    assert "WECOM_CORE_KEY" not in router.env  # listed without a value and unset: absent
    assert router.argv[1:] == ["serve"]  # the Dockerfile's ENTRYPOINT + CMD
    assert stack.proxied_jobs == ["node", "dcgm"]
    with pytest.raises(ComposeError, match="alertmanager:9094"):
        stack.rewire("url: http://alertmanager:9094/api", "a config")


# --- the stack ---------------------------------------------------------------------------------------


class ExporterProxy:
    """An HTTP proxy that answers for the placeholder GPU nodes of rules/deploy/prometheus.yml: a scrape of
    `http://gpu-node-01:9400/metrics` is served by the fleet's node 1 dcgm-exporter. It plays the network in
    which those names resolve, so the targets and the `node` label relabelled from them stay as written."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.asked: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, body = proxy.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def answer(self, target: str) -> tuple[int, bytes]:
        """A proxy request names the absolute URL it wants."""
        self.asked.append(target)
        url = urlsplit(target)
        node = {n.name: n for n in self.fleet.nodes}.get(url.hostname or "")
        exporter = EXPORTER_PORTS.get(url.port or 0)
        if node is None or exporter is None or url.path != "/metrics":
            return 502, f"no such exporter: {target}\n".encode()
        try:
            with urllib.request.urlopen(
                f"http://{self.fleet.address}/nodes/{node.index}/{exporter}/metrics", timeout=5
            ) as answer:
                return 200, answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def start(self) -> ExporterProxy:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def placeholder_nodes() -> list[str]:
    """The GPU node names rules/deploy/prometheus.yml lists (targets that are not compose services)."""
    config = yaml.safe_load((REPO / "rules" / "deploy" / "prometheus.yml").read_text(encoding="utf-8"))
    hosts = {
        target.rsplit(":", 1)[0]
        for job in config["scrape_configs"]
        for group in job.get("static_configs") or []
        for target in group["targets"]
    }
    return sorted(hosts - {*CONTAINER_PORTS, "localhost"})


def point_dingtalk(channels: Path, url: str) -> None:
    """A `url:` line after each `type: dingtalk` of the mounted channels.yml: the robot is the fake."""
    out = []
    for line in channels.read_text(encoding="utf-8").splitlines():
        out.append(line)
        if line.strip() == "type: dingtalk":
            out.append(line[: len(line) - len(line.lstrip())] + f"url: {url}/robot/send")
    channels.write_text("\n".join(out) + "\n", encoding="utf-8")
    dingtalk = [c for c in yaml.safe_load(channels.read_text())["channels"] if c["type"] == "dingtalk"]
    assert dingtalk
    assert {c.get("url") for c in dingtalk} == {f"{url}/robot/send"}


@dataclass
class Running:
    stack: ComposeStack
    fleet: Fleet
    proxy: ExporterProxy
    robot: FakeDingTalk

    def prometheus(self, path: str) -> Any:
        r = httpx.get(self.stack.services["prometheus"].url + path, timeout=10)
        assert r.status_code == 200, r.text
        return r.json()["data"]

    def router(self, path: str, **params: Any) -> Any:
        r = httpx.get(
            self.stack.services["alertrouter"].url + path,
            params=params,
            headers={"Authorization": f"Bearer {BEARER}"},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    need(PROMETHEUS is not None, "prometheus is not installed (run: bash .ci/setup)")
    need(ALERTMANAGER is not None, "prometheus-alertmanager is not installed (run: bash .ci/setup)")
    problem = pg.available()
    need(problem is None, problem or "")
    admin = urlsplit(pg.ADMIN_URL)
    postgres_env = load_compose()["services"]["postgres"]["environment"]
    assert admin.username == postgres_env["POSTGRES_USER"], (
        f"the local PostgreSQL role {admin.username} is not compose's POSTGRES_USER {postgres_env['POSTGRES_USER']}"
    )
    assert admin.password is not None
    assert admin.hostname is not None
    assert admin.port is not None
    dot_env = {  # the operator's .env
        "ALERTROUTER_BEARER_TOKEN": BEARER,
        "POSTGRES_PASSWORD": admin.password,
        "DINGTALK_CORE_TOKEN": ROBOT_TOKEN,
        "DINGTALK_CORE_SECRET": ROBOT_SECRET,
    }
    nodes = placeholder_nodes()
    assert nodes == [f"gpu-node-{i:02d}" for i in range(1, len(nodes) + 1)], nodes
    fleet = Fleet(len(nodes))
    fleet.set_gpus(XID_NODE, [XID_GPU], xid=XID)
    database = pg.create_database("alertrouter_compose")
    robot = FakeDingTalk({ROBOT_TOKEN: ROBOT_SECRET})
    with fleet:
        proxy = ExporterProxy(fleet).start()
        robot.start()
        stack = ComposeStack(
            tmp_path_factory.mktemp("compose"),
            dot_env,
            postgres=(admin.hostname, admin.port, database),
            scrape_proxy=proxy.url,
        )
        try:
            stack.prepare()
            point_dingtalk(Path(stack.services["alertrouter"].env["ALERTROUTER_CONFIG"]) / "channels.yml", robot.url)
            stack.start()
            yield Running(stack, fleet, proxy, robot)
        except BaseException:
            print(stack.log_tails())
            raise
        finally:
            stack.stop()
            robot.stop()
            proxy.stop()
            pg.drop_database(database)


@pytest.mark.e2e
@pytest.mark.alertmanager
@pytest.mark.postgres
def test_an_alert_of_the_shipped_rules_reaches_the_robot(running: Running) -> None:
    node = f"gpu-node-{XID_NODE:02d}"

    def told() -> list[dict[str, Any]]:
        return [m for m in running.robot.messages(ROBOT_TOKEN) if "GPUXidError" in json.dumps(m, ensure_ascii=False)]

    try:
        messages = wait_for(told, what="the GPUXidError message at the DingTalk robot", timeout=TIMEOUT)
    except AssertionError:
        print(running.stack.log_tails())
        raise
    text = json.dumps(messages[0], ensure_ascii=False)
    assert node in text, text
    # what alertrouter stored came through Prometheus (its labels, the node relabelled from the target)
    alerts = [a for a in running.router("/api/v1/alerts", limit=1000)["alerts"] if a["alertname"] == "GPUXidError"]
    assert len(alerts) == 1, alerts
    labels = alerts[0]["labels"]
    assert (labels["node"], labels["job"], labels["gpu"], labels["xid"]) == (node, "dcgm", str(XID_GPU), str(XID))
    assert labels["instance"] == f"{node}:9400"
    assert alerts[0]["node"] == node


@pytest.mark.e2e
@pytest.mark.alertmanager
@pytest.mark.postgres
def test_prometheus_loads_every_mounted_rule_file_and_scrapes_alertrouter(running: Running) -> None:
    mounted = Path(running.stack.services["prometheus"].root) / "etc" / "prometheus" / "rules"
    expected = {
        group["name"] for path in mounted.glob("*.rules.yml") for group in yaml.safe_load(path.read_text())["groups"]
    }
    assert "alertrouter-self" in expected  # the self-alerts of rules/prometheus/alertrouter.rules.yml
    loaded = {group["name"] for group in running.prometheus("/api/v1/rules")["groups"]}
    assert loaded == expected

    def targets() -> dict[str, list[str]]:
        active = running.prometheus("/api/v1/targets")["activeTargets"]
        jobs: dict[str, list[str]] = {}
        for target in active:
            jobs.setdefault(target["labels"]["job"], []).append(target["health"])
        return jobs if jobs and all(h == ["up"] * len(h) for h in jobs.values()) else {}

    try:
        jobs = wait_for(targets, what="every scrape target up", timeout=TIMEOUT)
    except AssertionError:
        print(running.prometheus("/api/v1/targets"))
        raise
    assert set(jobs) == {"prometheus", "node", "dcgm", "alertrouter", "alertmanager"}
    assert running.stack.proxied_jobs == ["node", "dcgm"]
    # the dashboard's and self-alerts' series exist: alertrouter's own metrics, scraped by job="alertrouter"
    up = running.prometheus("/api/v1/query?" + urlencode({"query": 'up{job="alertrouter"}'}))["result"]
    assert [r["value"][1] for r in up] == ["1"]
    series = running.prometheus("/api/v1/label/__name__/values")
    assert any(re.match(r"alertrouter_", name) for name in series)


@pytest.mark.e2e
@pytest.mark.alertmanager
@pytest.mark.postgres
def test_alertmanager_delivered_with_the_secret_token(running: Running) -> None:
    def metrics() -> str | None:  # once Alertmanager has counted its webhook's success (it may lag the robot's receipt)
        text = httpx.get(running.stack.services["alertmanager"].url + "/metrics", timeout=10).text
        sent = re.findall(r'^alertmanager_notifications_total\{integration="webhook"\} (\S+)$', text, re.MULTILINE)
        return text if sent and float(sent[0]) >= 1 else None

    text = wait_for(metrics, what="Alertmanager's webhook notification counted")
    failed = re.findall(
        r'^alertmanager_notifications_failed_total\{integration="webhook"(?:,[^}]*)?\} (\S+)$', text, re.MULTILINE
    )
    assert sum(float(v) for v in failed) == 0, "a webhook failed (401 would mean the token file and env disagree)"


@pytest.mark.e2e
@pytest.mark.alertmanager
@pytest.mark.postgres
def test_the_dashboard_reads_the_compose_prometheus(running: Running) -> None:
    """deploy/grafana/alertrouter.json against this Prometheus, its variables resolved as Grafana would: the
    stack has no `namespace` label, so Namespace has no values and its "All" (`.*`) matches; Job is found."""
    dashboard = json.loads((REPO / "deploy" / "grafana" / "alertrouter.json").read_text(encoding="utf-8"))

    def label_values(label: str, match: str) -> list[str]:
        r = httpx.get(
            running.stack.services["prometheus"].url + f"/api/v1/label/{label}/values",
            params={"match[]": match},
            timeout=10,
        )
        assert r.status_code == 200, r.text
        values: list[str] = r.json()["data"]
        return values

    jobs = wait_for(lambda: label_values("job", "alertrouter_build_info"), what="alertrouter_build_info scraped")
    assert label_values("namespace", "alertrouter_build_info") == []
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["namespace"]["includeAll"]
    assert variables["namespace"]["allValue"] == ".*"
    assert jobs == [variables["job"]["current"]["value"]]  # the dashboard opens on this stack's job
    values = {"$namespace": ".*", "$job": jobs[0], "$instance": ".*", "$__rate_interval": "1m", "$__range": "1h"}

    def panels(items: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for panel in items:
            yield panel
            yield from panels(panel.get("panels", []))

    answered: dict[str, list[Any]] = {}
    for panel in panels(dashboard["panels"]):
        for target in panel.get("targets", []):
            query = target["expr"]
            for variable, value in values.items():
                query = query.replace(variable, value)
            assert "$" not in query, query
            answered[query] = running.prometheus("/api/v1/query?" + urlencode({"query": query}))["result"]
    assert len(answered) >= 40
    build = [q for q in answered if "alertrouter_build_info" in q]
    assert build
    assert all(answered[q] for q in build), "the Versions panel is empty"

    def received() -> float | None:  # the XID alert, counted where the panels read it, once Prometheus scraped it
        found = running.prometheus("/api/v1/query?" + urlencode({"query": "sum(alertrouter_alerts_received_total)"}))
        count = float(found["result"][0]["value"][1]) if found["result"] else 0.0
        return count if count >= 1 else None

    wait_for(received, what="alertrouter_alerts_received_total at 1 or more")
