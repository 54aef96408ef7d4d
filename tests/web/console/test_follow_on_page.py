"""The console's incident page of a root Xid says its follow-ons folded into it, as its messages do: GPU 3
of gpu-node-07 falls off the bus (Xid 79), its 7 other GPUs report Xid 45 15 s later."""

from __future__ import annotations

import html as htmlmod

from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import dcgm_labels

from .conftest import TOKEN, App

EN = "GPU 3: Xid 79 (GPU has fallen off the bus) — reboot the node; 7 other GPUs reported Xid 45 as a consequence"
ZH = "GPU 3：Xid 79（GPU 已从总线掉线）— 重启节点；另有 7 块 GPU 随之报告 Xid 45（连带故障）"


async def _seed(app: App) -> None:
    node = {"node": "gpu-node-07"}
    await app.seed([dcgm_labels("10.0.0.7", "gpu-node-07", 3, "GPUFallenOffBus", xid="79", **node)])
    others = [dcgm_labels("10.0.0.7", "gpu-node-07", g, xid="45", **node) for g in range(8) if g != 3]
    await app.seed(others, starts="2026-01-01T00:00:15Z")
    await app.login()


async def _faults(app: App) -> str:
    incident = await app.incident_id("GPUFallenOffBus")
    raw = (await app.client.get(f"/incidents/{incident}")).text
    return htmlmod.unescape(raw.split('id="xids"')[1].split("</dd>")[0])


async def test_the_root_s_page_says_its_follow_ons(app: App) -> None:
    await _seed(app)
    assert EN in await _faults(app)
    alerts = (await app.client.get("/api/v1/alerts", params={"limit": 100}, headers=TOKEN)).json()["alerts"]
    (root,) = [a["fingerprint"] for a in alerts if a["labels"]["xid"] == "79"]
    folded = [a["decision_detail"] for a in alerts if a["labels"]["xid"] == "45"]
    assert folded == [{"inhibited_by": root, "inhibit_rule": "gpu-follow-on"}] * 7


async def test_the_chinese_page(app: App) -> None:
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")
    await _seed(app)
    assert ZH in await _faults(app)
