"""The node lookup against the real Prometheus (Debian's `prometheus`): a tiny exporter of node-exporter's
`node_uname_info` and kube-state-metrics' `kube_node_info`, `kube_pod_info` and `kube_node_labels`,
scraped by Prometheus, read by a running `alertrouter serve` with `topology.prometheus.url` set.

A node-exporter NodeDown (`instance="10.0.0.7:9100"`, no name) and a dcgm-exporter alert scraped by its
pod IP with `Hostname` = its pod's name (older GPU Operator charts) are both on `gpu-node-07`, with the
region and zone of that node's Kubernetes labels; nothing was relabelled and nothing was learned.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from alertrouter.web.console.language import LANGUAGE_COOKIE
from e2e.harness import Router, Store, wait_for, webhook, webhook_alert
from support.need import need
from support.procs import REPO, Proc, free_port

pytestmark = pytest.mark.e2e

PROMETHEUS = shutil.which("prometheus")
NODE_EXPORTER = 'node_uname_info{domainname="(none)",machine="x86_64",nodename="gpu-node-07",release="5.15.0-91-generic",sysname="Linux",version="#101-Ubuntu SMP"} 1\n'  # noqa: E501
# kube-state-metrics v2 exposition (its own labels; Prometheus adds job and instance)
KUBE_STATE_METRICS = "".join(
    [
        "# HELP kube_node_info [STABLE] Information about a cluster node.\n# TYPE kube_node_info gauge\n",
        'kube_node_info{node="gpu-node-07",internal_ip="10.0.0.7",kernel_version="5.15.0-91-generic",'
        'kubelet_version="v1.29.4",os_image="Ubuntu 22.04.4 LTS",pod_cidr="10.244.7.0/24"} 1\n',
        "# HELP kube_pod_info [STABLE] Information about pod.\n# TYPE kube_pod_info gauge\n",
        'kube_pod_info{namespace="gpu-operator",pod="nvidia-dcgm-exporter-5xk2p",uid="6f0a4c55",host_ip="10.0.0.7",'
        'pod_ip="10.244.7.23",node="gpu-node-07",created_by_kind="DaemonSet",created_by_name="nvidia-dcgm-exporter",'
        'priority_class="system-node-critical",host_network="false"} 1\n',
        'kube_pod_info{namespace="monitoring",pod="node-exporter-q8v4m",uid="0c8a7d2e",host_ip="10.0.0.7",'
        'pod_ip="10.0.0.7",node="gpu-node-07",created_by_kind="DaemonSet",created_by_name="node-exporter",'
        'priority_class="system-node-critical",host_network="true"} 1\n',
        "# HELP kube_node_labels [STABLE] Kubernetes labels converted to Prometheus labels.\n"
        "# TYPE kube_node_labels gauge\n",
        'kube_node_labels{node="gpu-node-07",label_kubernetes_io_hostname="gpu-node-07",'
        'label_topology_kubernetes_io_region="north",label_topology_kubernetes_io_zone="north-a"} 1\n',
    ]
)
PAGES = {"/node-exporter/metrics": NODE_EXPORTER, "/kube-state-metrics/metrics": KUBE_STATE_METRICS}


class _Exporter(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        page = PAGES.get(self.path)
        body = (page or "not found\n").encode()
        self.send_response(200 if page else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def exporter() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Exporter)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def prometheus_config(exporter: str) -> dict[str, Any]:
    """node-exporter scraped by the node's address (the target's `instance` says 10.0.0.7:9100, as a
    static or Consul config would), kube-state-metrics as kube-prometheus-stack does (honor_labels)."""
    return {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "scrape_configs": [
            {
                "job_name": "node",
                "metrics_path": "/node-exporter/metrics",
                "static_configs": [{"targets": [exporter], "labels": {"instance": "10.0.0.7:9100"}}],
            },
            {
                "job_name": "kube-state-metrics",
                "honor_labels": True,
                "metrics_path": "/kube-state-metrics/metrics",
                "static_configs": [{"targets": [exporter]}],
            },
        ],
    }


@pytest.fixture
def prometheus(tmp_path: Path, exporter: str) -> Iterator[Proc]:
    need(PROMETHEUS is not None, "prometheus is not installed (run: bash .ci/setup)")
    assert PROMETHEUS is not None
    work = tmp_path / "prometheus"
    work.mkdir()
    (work / "prometheus.yml").write_text(yaml.safe_dump(prometheus_config(exporter), sort_keys=False))
    port = free_port()
    args = [
        PROMETHEUS,
        f"--config.file={work / 'prometheus.yml'}",
        f"--storage.tsdb.path={work / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
    ]
    log = work / "prometheus.log"
    with log.open("ab") as out:
        popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=work)
    proc = Proc("prometheus", popen, f"http://127.0.0.1:{port}", log)
    try:
        proc.wait_ready("/-/ready")
        yield proc
    finally:
        proc.stop()
        print(f"\n----- prometheus log tail -----\n{proc.logs()[-3000:]}")


def query(prom: Proc, expr: str) -> list[dict[str, Any]]:
    r = httpx.get(prom.url + "/api/v1/query", params={"query": expr}, timeout=10)
    assert r.status_code == 200, r.text
    result: list[dict[str, Any]] = r.json()["data"]["result"]
    return result


def rules_with_lookup(tmp_path: Path, prometheus_url: str) -> Path:
    """The shipped rules, with `topology.prometheus` pointed at the test's Prometheus."""
    rules = tmp_path / "rules"
    rules.mkdir()
    for path in sorted((REPO / "rules").glob("*.yml")):
        if path.name != "topology.yml":
            shutil.copy(path, rules / path.name)
    topology = {"topology": {"prometheus": {"url": prometheus_url, "refresh": "1s", "timeout": "5s"}}}
    (rules / "topology.yml").write_text(yaml.safe_dump(topology))
    return rules


NODE_DOWN = {"alertname": "NodeDown", "instance": "10.0.0.7:9100", "job": "node", "severity": "critical"}
DCGM_BY_POD_IP = {
    "alertname": "GPUXidError",
    "instance": "10.244.7.23:9400",
    "job": "nvidia-dcgm-exporter",
    "namespace": "gpu-operator",
    "pod": "nvidia-dcgm-exporter-5xk2p",
    "service": "nvidia-dcgm-exporter",
    "Hostname": "nvidia-dcgm-exporter-5xk2p",
    "gpu": "3",
    "UUID": "GPU-5b3c8f7e-2a41-9d6c-0e1f-4a7b2c9d8e31",
    "device": "nvidia3",
    "modelName": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:5D:00.0",
    "err_code": "79",
    "severity": "critical",
}


def test_prometheus_names_a_node_down_and_a_pod_ip_gpu_alert(
    tmp_path: Path, prometheus: Proc, sqlite_store: Store, start_router: Callable[..., Router]
) -> None:
    wait_for(
        lambda: all(query(prometheus, s) for s in ("node_uname_info", "kube_pod_info", "kube_node_labels")),
        what="Prometheus to have scraped the exporter",
    )
    rules = rules_with_lookup(tmp_path, prometheus.url)
    router = start_router(sqlite_store, env={"ALERTROUTER_CONFIG": str(rules)})
    now = datetime.now(UTC)
    alerts = [
        webhook_alert(NODE_DOWN, starts_at=now, annotations={"summary": "node-exporter 10.0.0.7:9100 is down"}),
        webhook_alert(DCGM_BY_POD_IP, starts_at=now, annotations={"summary": "XID 79: GPU has fallen off the bus"}),
    ]
    assert router.post_webhook(webhook(alerts, group_by=("alertname",))).status_code == 200

    def named() -> list[dict[str, Any]] | None:
        found = router.alerts()
        return found if len(found) == 2 and {a["node"] for a in found} == {"gpu-node-07"} else None

    found = wait_for(named, what="both alerts on gpu-node-07")
    for alert in found:
        assert alert["topology"] == {"region": "north", "zone": "north-a"}, alert
        assert "region" not in alert["labels"]  # the alert's own labels are kept as received
    by_name = {a["alertname"]: a for a in found}
    assert by_name["GPUXidError"]["decision"] == "inhibited"  # `equal: [node]` met its NodeDown

    nodes = router.http.get("/api/v1/nodes").json()
    discovered = {d["key"]: d for d in nodes["discovered"]}
    assert discovered["10.0.0.7"]["node"] == "gpu-node-07"
    assert discovered["10.0.0.7"]["source"] == "prometheus"
    assert discovered["10.0.0.7"]["series"] == "kube_node_info"
    assert discovered["10.244.7.23"]["series"] == "kube_pod_info/pod_ip"
    assert discovered["nvidia-dcgm-exporter-5xk2p"]["kind"] == "pod"
    assert "node-exporter-q8v4m" not in discovered  # a host-network pod's name is not mapped
    assert nodes["prometheus"]["url"] == prometheus.url
    assert all(s["problem"] is None for s in nodes["prometheus"]["series"])
    page = router.http.get("/nodes", headers={"Cookie": f"{LANGUAGE_COOKIE}=en"})  # the rules say zh-CN: the switch
    assert page.status_code == 200
    assert "Discovered from Prometheus" in page.text
    assert "10.244.7.23" in page.text

    # Prometheus goes away: the passes go on, the names stay, the failure is counted and shown
    prometheus.stop()
    wait_for(
        lambda: router.metric("alertrouter_node_lookup_errors_total", series="node_uname_info") >= 2,
        what="the lookup's failures to be counted",
    )
    assert httpx.get(router.url + "/readyz", timeout=10).status_code == 200
    nodes = router.http.get("/api/v1/nodes").json()
    assert {s["problem"] for s in nodes["prometheus"]["series"]} == {"unreachable"}
    assert {d["key"] for d in nodes["discovered"]} >= {"10.0.0.7", "10.244.7.23"}
    later = dict(NODE_DOWN, alertname="NodeFilesystemReadOnly", severity="warning")
    body = webhook([webhook_alert(later, starts_at=datetime.now(UTC), annotations={})], group_by=("alertname",))
    assert router.post_webhook(body).status_code == 200
    wait_for(
        lambda: [
            a for a in router.alerts() if a["alertname"] == "NodeFilesystemReadOnly" and a["node"] == "gpu-node-07"
        ],
        what="an alert arriving while Prometheus is down to be named from the last answer",
    )
    assert router.proc.logs().count("node lookup: reading") == 1  # one problem, one warning
