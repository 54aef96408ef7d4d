"""`GET /api/v1/jobs` over a running app on the shipped rules (rules/jobs.yml, no Prometheus lookup): GPU alerts
of dcgm-exporter under a ServiceMonitor and on a Slurm node name their jobs by the pod-name rule and by
`hpc_job`; a job whose alerts resolve moves from `now` to `recent`; the rules off answer 404."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import httpx

from alertrouter.app import create_app
from alertrouter.model import utcnow
from alertrouter.ruleset import load_ruleset
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from support.scenario import dcgm_labels
from support.webhooks import webhook

from .conftest import AUTH, TOKEN

Client = tuple[httpx.AsyncClient, Runtime]


def workload(gpu: int, pod: str) -> dict[str, str]:
    """dcgm-exporter under the GPU Operator's ServiceMonitor: the GPU's user is exported_pod."""
    labels = dcgm_labels("10.244.3.17", "gpu-node-03", gpu, xid="13", exported_namespace="ml-research")
    return {**labels, "exported_pod": pod, "namespace": "gpu-operator", "pod": "nvidia-dcgm-exporter-5xk2p"}


async def post(client: httpx.AsyncClient, body: bytes) -> None:
    r = await client.post("/webhook/alertmanager", content=body, headers=AUTH)
    assert r.status_code == 200, r.text


async def test_jobs_hit_now_then_recent(app_client: Client) -> None:
    client, runtime = app_client
    start = utcnow().replace(microsecond=0) - timedelta(hours=2)
    llama = [workload(0, "llama-train-worker-3"), workload(1, "llama-train-worker-3")]
    slurm = dcgm_labels("10.0.1.11", "gpu-node-11", 2, xid="79", hpc_job="884213")
    await post(client, webhook([*llama, slurm], starts_at=start))
    await runtime.engine.run_once()
    body = (await client.get("/api/v1/jobs", headers=AUTH)).json()
    assert body["days"] == 7
    assert body["lookup"] == {"configured": False, "problem": None}
    assert body["recent"] == []
    now = {j["key"]: j for j in body["now"]}
    assert sorted(now) == ["884213", "ml-research/llama-train"]
    llm = now["ml-research/llama-train"]
    assert (llm["source"], llm["detail"], llm["note"]) == ("pod-name", "<job>-<role>-N", "")
    assert (llm["nodes"], llm["down_count"], llm["gpus_lost"], llm["alerts"]) == (["gpu-node-03"], 0, 2, 2)
    assert llm["since"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert llm["incidents"] == ['gpu-by-node{alertname="GPUXidError",node="gpu-node-03"}']
    assert (now["884213"]["namespace"], now["884213"]["source"], now["884213"]["detail"]) == ("", "label", "hpc_job")
    await post(client, webhook(llama, status="resolved", starts_at=start, ends_at=utcnow()))
    await runtime.engine.run_once()
    body = (await client.get("/api/v1/jobs", headers=AUTH)).json()
    assert [j["key"] for j in body["now"]] == ["884213"]
    (done,) = body["recent"]
    assert (done["key"], done["hit_now"], done["gpus_lost"]) == ("ml-research/llama-train", False, 2)
    assert done["resolved_at"] is not None
    assert 0 <= done["gpu_hours_lost"] < 0.1  # 2 GPUs for the seconds between the two passes


async def test_a_bad_days_parameter_is_a_400(app_client: Client) -> None:
    client, _ = app_client
    r = await client.get("/api/v1/jobs?days=0", headers=AUTH)
    assert r.status_code == 400
    assert "days" in r.json()["detail"]
    assert (await client.get("/api/v1/jobs")).status_code == 401


async def test_without_the_jobs_rules_the_endpoint_is_a_404(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "a.yml").write_text("route: {receiver: r}\nreceivers: [{name: r}]\n")
    app = create_app(Settings(database_url=database_url, bearer_token=TOKEN), load_ruleset(tmp_path, {}))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url="http://ar") as c:
        r = await c.get("/api/v1/jobs", headers=AUTH)
    assert (r.status_code, r.json()) == (404, {"detail": "no jobs: section in the rules"})
