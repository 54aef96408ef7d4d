"""Job-impact messages end to end: a real Prometheus (Debian's `prometheus`) scrapes kube-state-metrics'
`kube_node_info`, `kube_pod_info`, `kube_pod_owner` and `kube_pod_labels` of four GPU nodes running a Kubeflow
PyTorchJob (ml-train/llm-pretrain on gpu-node-01..03) and a Volcano Job (vc/sweep on gpu-node-04); a running
`alertrouter serve` reads them (`topology.prometheus`, `jobs:`) and receives node-exporter NodeDowns.

The job's owner (ml-train -> the team's WeCom robot, in English) is told once per job, updated when more of
its nodes go down, and told when they are back; vc's job goes to the default receiver (the on-call DingTalk
robot, in Chinese), beside the infrastructure incidents, which are told as before.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from e2e import test_prometheus_lookup_e2e as lookup_e2e
from e2e.harness import Router, Store, wait_for, webhook, webhook_alert
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.wecom import FakeWeCom
from support.procs import Proc

pytestmark = pytest.mark.e2e

DT_TOKEN, DT_SECRET = "dt-token-jobs-41c0", "SEC0a1b2c3d4e5f60718293a4b5c6d7e8f9"  # literal test credentials
WECOM_KEY = "wecom-key-jobs-77d2"


def _pod(namespace: str, pod: str, node: int, owner: tuple[str, str], labels: str = "") -> str:
    ip = f"10.244.{node}.{10 + len(pod) % 200}"
    common = f'namespace="{namespace}",pod="{pod}",uid="u-{pod}"'
    return (
        f'kube_pod_info{{{common},host_ip="10.0.1.{node}",pod_ip="{ip}",node="gpu-node-{node:02d}",'
        f'created_by_kind="{owner[0]}",created_by_name="{owner[1]}",priority_class="",host_network="false"}} 1\n'
        f'kube_pod_owner{{{common},owner_kind="{owner[0]}",owner_name="{owner[1]}",owner_is_controller="true"}} 1\n'
        f"kube_pod_labels{{{common}{labels}}} 1\n"
    )


NODES = range(1, 5)
# kube-state-metrics v2 with --metric-labels-allowlist=pods=[training.kubeflow.org/job-name,volcano.sh/job-name]
KUBE_STATE_METRICS = "".join(
    [f'kube_node_info{{node="gpu-node-{n:02d}",internal_ip="10.0.1.{n}",kubelet_version="v1.29.4"}} 1\n' for n in NODES]
    + [_pod("gpu-operator", f"nvidia-dcgm-exporter-{n}x2kp", n, ("DaemonSet", "nvidia-dcgm-exporter")) for n in NODES]
    + [
        _pod("ml-train", "llm-pretrain-master-0", 1, ("PyTorchJob", "llm-pretrain"),
             ',label_training_kubeflow_org_job_name="llm-pretrain"'),
        _pod("ml-train", "llm-pretrain-worker-0", 2, ("PyTorchJob", "llm-pretrain"),
             ',label_training_kubeflow_org_job_name="llm-pretrain"'),
        _pod("ml-train", "llm-pretrain-worker-1", 3, ("PyTorchJob", "llm-pretrain"),
             ',label_training_kubeflow_org_job_name="llm-pretrain"'),
        _pod("vc", "sweep-trainer-0", 4, ("Job", "sweep"), ',label_volcano_sh_job_name="sweep"'),
    ]
)  # fmt: skip

RULES = """\
global: {language: zh-CN, timezone: Asia/Shanghai}
topology:
  prometheus: {url: %(prometheus)s, refresh: 1s, timeout: 5s}
aggregation:
  - name: node
    group_by: [alertname, node]
    group_wait: 1s
    rollup: off
route:
  receiver: oncall
  group_wait: 1s
  group_interval: 2s
  repeat_interval: 1h
receivers:
  - name: oncall
    channels: [robot]
  - name: ml-team
    language: en
    timezone: Europe/Berlin
    channels: [wecom]
channels:
  - name: robot
    type: dingtalk
    url: %(dingtalk)s/robot/send
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET}
  - name: wecom
    type: wecom
    url: %(wecom)s/cgi-bin/webhook/send
    key: ${WECOM_KEY}
jobs:
  namespaces: {ml-train: ml-team}
  default_receiver: oncall
  gpus_per_node: 8
"""


class _KubeStateMetrics(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = KUBE_STATE_METRICS.encode() if self.path == "/kube-state-metrics/metrics" else b""
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


prometheus = lookup_e2e.prometheus  # the real Prometheus, scraping `exporter` below


@pytest.fixture
def exporter() -> Iterator[str]:
    """This cluster's kube-state-metrics, for the lookup test's `prometheus` fixture (its node-exporter page
    is empty here: the NodeDowns say the nodes are down)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _KubeStateMetrics)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def node_down(n: int) -> dict[str, str]:
    """`up{job="node"} == 0` of node-exporter scraped by the node's address: no name of the node anywhere."""
    return {"alertname": "NodeDown", "instance": f"10.0.1.{n}:9100", "job": "node", "severity": "critical"}


SUMMARY = {"summary": "node-exporter is down"}


def wecom_texts(fake: FakeWeCom) -> list[str]:
    return [str(body[body["msgtype"]].get("content", "")) for body in fake.messages(WECOM_KEY)]


def dingtalk_texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")).replace("\\", "") for body in fake.messages(DT_TOKEN)]


def test_a_job_hit_is_told_to_its_owner_updated_and_resolved_beside_the_nodes_incidents(
    tmp_path: Path,
    prometheus: Proc,
    sqlite_store: Store,
    start_router: Callable[..., Router],
) -> None:
    wait_for(
        lambda: lookup_e2e.query(prometheus, "kube_pod_owner") or None,
        what="Prometheus to have scraped kube-state-metrics",
    )
    with FakeDingTalk({DT_TOKEN: DT_SECRET}) as dingtalk, FakeWeCom([WECOM_KEY]) as wecom:
        rules = tmp_path / "rules"
        rules.mkdir()
        urls = {"prometheus": prometheus.url, "dingtalk": dingtalk.url, "wecom": wecom.url}
        (rules / "rules.yml").write_text(RULES % urls)
        env = {"ALERTROUTER_CONFIG": str(rules), "DT_TOKEN": DT_TOKEN, "DT_SECRET": DT_SECRET, "WECOM_KEY": WECOM_KEY}
        router = start_router(sqlite_store, env=env | {"ALERTROUTER_DELIVERY_INTERVAL": "200ms"})
        started = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(minutes=3)
        down = [webhook_alert(node_down(n), starts_at=started, annotations=SUMMARY) for n in (1, 2, 4)]
        assert router.post_webhook(webhook(down, group_by=("alertname",))).status_code == 200

        first = wait_for(lambda: wecom_texts(wecom) or None, what="the job's owner's message")[0]
        assert "ml-train/llm-pretrain (on 3 nodes): 2 nodes down, 16 GPUs lost" in first
        assert f"since {started.astimezone(ZoneInfo('Europe/Berlin')):%H:%M}" in first
        zh = wait_for(lambda: [t for t in dingtalk_texts(dingtalk) if "vc/sweep" in t] or None, what="vc's job message")
        assert "vc/sweep（共 1 个节点）：1 个节点宕机，损失 8 块 GPU" in zh[0]
        assert "开始于" in zh[0]
        # the infrastructure incidents are told as before, to on-call, as well
        wait_for(lambda: [t for t in dingtalk_texts(dingtalk) if "gpu-node-01" in t and "NodeDown" in t] or None,
                 what="the NodeDown message of gpu-node-01")  # fmt: skip

        more = [webhook_alert(node_down(n), starts_at=started, annotations=SUMMARY) for n in (1, 2, 3, 4)]
        assert router.post_webhook(webhook(more, group_by=("alertname",))).status_code == 200
        update = wait_for(lambda: wecom_texts(wecom)[1:] or None, what="the job's update")[0]
        assert "ml-train/llm-pretrain (on 3 nodes): 3 nodes down, 24 GPUs lost" in update
        assert "Update" in update

        jobs = router.http.get("/api/v1/jobs").json()
        hit = {j["key"]: j for j in jobs["now"]}
        assert (hit["ml-train/llm-pretrain"]["down_count"], hit["ml-train/llm-pretrain"]["gpus_lost"]) == (3, 24)
        assert (hit["ml-train/llm-pretrain"]["source"], hit["vc/sweep"]["source"]) == ("lookup", "lookup")
        assert hit["ml-train/llm-pretrain"]["detail"] == "kube_pod_labels label_training_kubeflow_org_job_name"
        assert jobs["lookup"] == {"configured": True, "problem": None}

        ended = datetime.now(UTC)
        back = [webhook_alert(node_down(n), starts_at=started, ends_at=ended, annotations=SUMMARY) for n in NODES]
        assert router.post_webhook(webhook(back, group_by=("alertname",))).status_code == 200
        resolved = wait_for(lambda: wecom_texts(wecom)[2:] or None, what="the job's resolved message")[0]
        assert "ml-train/llm-pretrain" in resolved
        assert re.search(r"RESOLVED|Resolved|resolved", resolved)
    assert len(wecom_texts(wecom)) == 3  # one job, told three times: first, one update, resolved
