"""The console's Jobs page: the jobs hit now and in the last week, with the source that named each, nodes
down, GPUs lost and since when, in English and in Chinese (no English word of the product on a zh-CN page)."""

from __future__ import annotations

import re

from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import dcgm_labels

from .conftest import App
from .test_languages import _WORD, KEPT, _visible


def workload(gpu: int) -> dict[str, str]:
    """dcgm-exporter under the GPU Operator's ServiceMonitor: the GPU's user is exported_pod."""
    labels = dcgm_labels("10.244.3.17", "gpu-node-03", gpu, xid="13", exported_namespace="ml-research")
    return {**labels, "exported_pod": "llama-train-worker-3", "namespace": "gpu-operator", "pod": "dcgm-x"}


SLURM = dcgm_labels("10.0.1.11", "gpu-node-11", 2, xid="79", hpc_job="884213")
KEPT_HERE = KEPT | {"UTC", "XID"}


def _row(html: str, key: str) -> str:
    found = re.search(rf'<tr data-job="{re.escape(key)}"[^>]*>(.*?)</tr>', html, re.S)
    assert found is not None, f"no row for {key}"
    return found.group(0)


async def test_anonymous_is_sent_to_login(app: App) -> None:
    r = await app.client.get("/jobs")
    assert (r.status_code, r.headers["location"]) == (303, "/login?next=%2Fjobs")


async def test_jobs_hit_now_and_last_week(app: App) -> None:
    await app.seed([workload(0), workload(1), SLURM])
    await app.seed([SLURM], status="resolved")
    await app.login()
    page = (await app.client.get("/jobs")).text
    assert '<a href="/jobs" aria-current="page">Jobs</a>' in page
    now, week = page.split("<h2>Last week</h2>")
    llama = _row(now, "ml-research/llama-train")
    assert 'data-source="pod-name"' in llama
    assert "pod name" in llama
    assert "&lt;job&gt;-&lt;role&gt;-N" in llama
    assert re.search(r"<td>2</td>", llama)  # GPUs lost
    assert "gpu-node-03" in llama
    slurm = _row(week, "884213")
    assert "alert label" in slurm
    assert "ended " in slurm
    assert "884213" not in now


async def test_the_page_in_chinese(app: App) -> None:
    await app.seed([workload(0), SLURM])
    await app.seed([SLURM], status="resolved")
    await app.login()
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")
    page = (await app.client.get("/jobs")).text
    app.client.cookies.delete(LANGUAGE_COOKIE)
    assert '<html lang="zh-CN">' in page
    data = {*workload(0).values(), *SLURM.values(), "ml-research/llama-train", "alertrouter", "alice", "hpc_job"}
    leaked = [w for w in _WORD.findall(_visible(page, sorted(data, key=len, reverse=True))) if w not in KEPT_HERE]
    assert leaked == []
    assert "作业" in page
    assert "Pod 名称" in _row(page, "ml-research/llama-train")
