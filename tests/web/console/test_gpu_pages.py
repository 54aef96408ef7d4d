"""The console's GPU pages: every GPU by its UUID, the RMA candidates, one GPU's events with the evidence,
in English and in Chinese (no English word of the product on a zh-CN page but the codes kept as codes)."""

from __future__ import annotations

import re

from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.scenario import dcgm_labels

from .conftest import App
from .test_languages import _WORD, KEPT, _visible

LEMON = dcgm_labels("10.0.0.7", "gpu-node-07", 3, xid="48")
APP_FAULT = dcgm_labels("10.0.0.8", "gpu-node-08", 0, xid="13")
# Identifiers kept as written in a Chinese page, as "GPU" is: the GPU's own UUID and NVIDIA's XID codes
# (RMA is said 返修; the `rma:` section's name is data).
KEPT_HERE = KEPT | {"UUID", "XID", "UTC"}  # and these rules' time zone, as test_languages keeps its own


async def _seed(app: App) -> None:
    await app.seed([LEMON, APP_FAULT], starts="2026-01-01T00:00:00Z")
    await app.seed([LEMON], status="resolved", starts="2026-01-01T00:00:00Z")
    await app.seed([LEMON], starts="2026-01-12T06:00:00Z")  # Xid 48 again, 11 days and 6 hours later


def _row(html: str, uuid: str) -> str:
    found = re.search(rf'<tr data-uuid="{re.escape(uuid)}"[^>]*>(.*?)</tr>', html, re.S)
    assert found is not None, f"no row for {uuid}"
    return found.group(0)


async def test_anonymous_is_sent_to_login(app: App) -> None:
    r = await app.client.get("/gpus")
    assert (r.status_code, r.headers["location"]) == (303, "/login?next=%2Fgpus")


async def test_the_list_and_the_rma_candidates(app: App) -> None:
    await _seed(app)
    await app.login()
    page = (await app.client.get("/gpus")).text
    assert '<a href="/gpus" aria-current="page">GPUs</a>' in page
    assert "(2 GPUs)" in page
    lemon = _row(page, "GPU-gpu-node-07-3")
    assert 'data-rma-candidate="true"' in lemon
    assert "RMA candidate" in lemon
    assert (
        '<span class="mono">XID 48</span> 2 times within 11d 6h (rule <span class="mono">dbe-repeated</span>)'
    ) in lemon
    assert 'href="/gpus/GPU-gpu-node-07-3"' in lemon
    other = _row(page, "GPU-gpu-node-08-0")
    assert 'data-rma-candidate="false"' in other
    assert "no RMA rule met" in other
    only = (await app.client.get("/gpus?rma=true")).text
    assert "(1 GPU)" in only
    assert "GPU-gpu-node-07-3" in only
    assert "GPU-gpu-node-08-0" not in only


async def test_one_gpu_with_its_evidence(app: App) -> None:
    await _seed(app)
    await app.login()
    page = (await app.client.get("/gpus/GPU-gpu-node-07-3")).text
    assert '<dl id="gpu" data-rma-candidate="true">' in page
    assert "NVIDIA H100 80GB HBM3" in page
    assert "not exported" in page  # no serial label
    assert "00000000:1B:00.0" in page
    events = re.findall(r'<tr data-xid="48" class="evidence">', page)
    assert len(events) == 2
    assert page.count(">evidence</span>") == 2
    missing = await app.client.get("/gpus/GPU-never")
    assert missing.status_code == 404
    assert "No GPU with UUID GPU-never has been seen." in missing.text


async def test_the_pages_in_chinese(app: App) -> None:
    await _seed(app)
    await app.login()
    app.client.cookies.set(LANGUAGE_COOKIE, "zh-CN")
    pages = {path: (await app.client.get(path)).text for path in ("/gpus", "/gpus?rma=true", "/gpus/GPU-gpu-node-07-3")}
    app.client.cookies.delete(LANGUAGE_COOKIE)
    data = {*LEMON.values(), *APP_FAULT.values(), *LEMON, "dbe-repeated", "rma", "alertrouter", "alice"}
    for path, page in pages.items():
        assert '<html lang="zh-CN">' in page, path
        leaked = [w for w in _WORD.findall(_visible(page, sorted(data, key=len, reverse=True))) if w not in KEPT_HERE]
        assert leaked == [], f"{path}: {leaked}"
    assert "返修候选" in _row(pages["/gpus"], "GPU-gpu-node-07-3")
    assert "在 11 天 6 小时 内出现 2 次" in pages["/gpus"]
    assert "（1 块 GPU）" in pages["/gpus?rma=true"]
    assert "证据" in pages["/gpus/GPU-gpu-node-07-3"]
