"""The incident page of a node whose GPUs reported XIDs: each distinct XID with its GPUs, NVIDIA's meaning
and immediate action, and the workload on the GPUs, in the person's language; labels stay escaped."""

from __future__ import annotations

import html as htmlmod

from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import dcgm_labels

from .conftest import App

HOSTILE_POD = "<script>alert(1)</script>"


def xid_alerts() -> list[dict[str, str]]:
    """The shipped rules' alerts on dcgm-exporter 4.x series, under the GPU operator's pod mapping."""
    k8s = {"exported_namespace": "ml-team", "exported_container": "trainer", "node": "gpu-node-07"}

    def alert(gpu: int, alertname: str, code: str, pod: str) -> dict[str, str]:
        return dcgm_labels("10.0.0.7", "gpu-node-07", gpu, alertname, xid=code, err_code=code, exported_pod=pod, **k8s)

    return [
        alert(1, "GPUXidError", "95", "llama-0"),
        alert(3, "GPUXidError", "95", "llama-1"),
        alert(5, "GPUXidError", "48", HOSTILE_POD),
        alert(6, "GPUFallenOffBus", "79", "llama-3"),
    ]


async def _page(app: App, part: str) -> str:
    await app.seed(xid_alerts())
    await app.login()
    incident = await app.incident_id(part)
    return htmlmod.unescape((await app.client.get(f"/incidents/{incident}")).text)


async def test_the_incident_page_says_what_each_xid_means_and_what_to_do(app: App) -> None:
    await _page(app, "GPUXidError")
    incident = await app.incident_id("GPUXidError")
    raw = (await app.client.get(f"/incidents/{incident}")).text
    assert "<script>alert(1)</script>" not in raw  # the pod name is data, escaped
    facts = htmlmod.unescape(raw.split('id="xids"')[1].split("</dd>")[0])
    for line in (
        "XID 48 on GPU 5: Double Bit ECC Error — action: reset the GPU to remap its memory; RMA if the remap"
        " fails (XID 64) or it repeats",
        "XID 95 on GPU 1, 3: Uncontained ECC error — action: reset the GPU",
    ):
        assert line in facts
    assert '<a id="xid-catalog" href="https://docs.nvidia.com/deploy/xid-errors/"' in raw  # the whole procedures
    workloads = htmlmod.unescape(raw.split('id="workloads"')[1].split("</dd>")[0])
    assert f"ml-team/{HOSTILE_POD}, ml-team/llama-0, ml-team/llama-1" in workloads  # sorted
    table = htmlmod.unescape(raw.split('id="alerts"')[1].split("</table>")[0])
    assert table.count("Uncontained ECC error — action: reset the GPU") == 2  # one per alert
    assert "fallen off the bus" not in raw  # another incident's (GPUFallenOffBus on the same node)
    assert "Workload: ml-team/llama-0" in table


async def test_the_chinese_incident_page(app: App) -> None:
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")
    page = await _page(app, "GPUFallenOffBus")
    assert "GPU 故障" in page
    assert "XID 79（GPU 6）：GPU 已从总线掉线 — 处理：重启节点" in page
    assert "工作负载：ml-team/llama-3" in page


async def test_a_page_without_xids_shows_no_fault_section(app: App) -> None:
    labels = dcgm_labels("10.0.0.8", "gpu-node-08", 2, "GPUHighTemp", node="gpu-node-08")
    await app.seed([labels])
    await app.login()
    incident = await app.incident_id("gpu-node-08")
    page = (await app.client.get(f"/incidents/{incident}")).text
    assert 'id="xids"' not in page
    assert 'id="workloads"' not in page
