"""Screenshots of the console's incident list over a realistic storm, for the docs.

    .venv/bin/python tests/bench/console_screenshot.py --out docs/assets/
    .venv/bin/python tests/bench/console_screenshot.py --out docs/assets/ --language zh-CN

Starts `alertrouter serve` on a throwaway SQLite store, sends it what Alertmanager would during a storm
(Xid 79 on 14 nodes of one rack, rolled up into a cluster incident, plus unrelated node incidents, one
acknowledged, one silenced, one resolved), logs in with Debian's Chromium through Playwright and saves
`console-incidents.png` (desktop) and `console-incidents-phone.png` (390 px wide). With `--language zh-CN`
the pages are Chinese (the language switch's cookie, whatever the rules say), the rules' time zone is
Asia/Shanghai, and the files are `console-incidents-zh-CN.png` and `console-incidents-phone-zh-CN.png`
(Chinese drawn with Debian's fonts-noto-cjk).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from playwright.sync_api import sync_playwright

from alertrouter.auth.passwords import hash_password
from alertrouter.message.i18n import LANGUAGES
from alertrouter.web.console.language import LANGUAGE_COOKIE
from e2e.harness import gpu_labels, webhook, webhook_alert
from support.procs import REPO, start_alertrouter

HOOK_TOKEN = "screenshot-hook-token"
API_TOKEN = "screenshot-api-token-0123456789"
PASSWORD = "screenshot password"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]  # fmt: skip


def labels(node: int, gpu: int, region: str, rack: str, **kw: str) -> dict[str, str]:
    return {**gpu_labels(node, gpu, **kw), "region": region, "rack": rack}


def send(url: str, alerts: Iterable[Mapping[str, str]], at: datetime, notes: Mapping[str, str] | None = None) -> None:
    items = [webhook_alert(a, starts_at=at, annotations=dict(notes) if notes else None) for a in alerts]
    body = webhook(items)
    auth = {"Authorization": f"Bearer {HOOK_TOKEN}"}
    r = httpx.post(f"{url}/webhook/alertmanager", content=json.dumps(body), headers=auth, timeout=10)
    r.raise_for_status()


def seed(url: str) -> None:
    now = datetime.now(UTC)
    api = {"Authorization": f"Bearer {API_TOKEN}"}
    xid = {"summary": "Xid 79: GPU has fallen off the bus", "description": "NVRM: Xid 79 reported by the driver"}
    for i, node in enumerate(range(112, 126)):  # a storm: one rack loses GPUs after a PDU fault
        gpus = [g for g in range(8) if (g + i) % 3 != 1][: 1 + i % 8]
        send(url, [labels(node, g, "north", "r12", alertname="GPUXidError", severity="critical") for g in gpus],
             now - timedelta(minutes=9), xid)  # fmt: skip
    send(url, [labels(147, g, "east", "r03") for g in (0, 3, 4)], now - timedelta(minutes=42))
    send(url, [labels(88, 6, "south", "r07", alertname="GPUMemoryECCError")], now - timedelta(hours=3))
    send(url, [labels(203, g, "south", "r09", alertname="GPUPowerHigh") for g in range(8)], now - timedelta(minutes=18))
    send(url, [labels(31, 2, "east", "r01", alertname="GPUHighTemp")], now - timedelta(hours=1))
    node_down = {"alertname": "NodeDown", "instance": "gpu-node-64:9100", "job": "node", "severity": "critical",
                 "region": "west", "rack": "r02"}  # fmt: skip
    send(url, [node_down], now - timedelta(minutes=6), {"summary": "gpu-node-64 is unreachable"})
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        found = httpx.get(f"{url}/api/v1/incidents?limit=1000", headers=api, timeout=10).json()["incidents"]
        if any(i["kind"] == "cluster" for i in found) and len(found) >= 20:
            break
        time.sleep(0.3)
    by_headline = {i["headline"]: i["id"] for i in found}
    ecc = next(v for k, v in by_headline.items() if "gpu-node-88" in k)
    httpx.post(f"{url}/api/v1/incidents/{ecc}/ack", headers=api, timeout=10).raise_for_status()
    silence = {"matchers": ['node="gpu-node-203"'], "duration": "2h", "comment": "PSU swap, ticket OPS-4821"}
    httpx.post(f"{url}/api/v1/silences", json=silence, headers=api, timeout=10).raise_for_status()
    resolved = webhook_alert(labels(31, 2, "east", "r01", alertname="GPUHighTemp"), starts_at=now - timedelta(hours=1),
                             ends_at=now - timedelta(minutes=2))  # fmt: skip
    auth = {"Authorization": f"Bearer {HOOK_TOKEN}"}
    httpx.post(f"{url}/webhook/alertmanager", content=json.dumps(webhook([resolved])), headers=auth, timeout=10)
    time.sleep(1.5)  # let the engine apply the silence and the resolve (it runs every 200 ms)


def zoned_rules(work: Path, language: str) -> Path:
    """The shipped rules; for Chinese, with times in Asia/Shanghai as a Chinese team would set them (the
    language itself comes from the switch's cookie, as it would for a person whose rules say English)."""
    if language == "en":
        return REPO / "rules"
    rules = work / "rules"
    shutil.copytree(REPO / "rules", rules)
    main = rules / "alertrouter.yml"
    text = main.read_text(encoding="utf-8")
    if re.search(r"^  timezone:", text, flags=re.M):  # the rules set one already: Shanghai instead
        text = re.sub(r"^  timezone:.*$", "  timezone: Asia/Shanghai", text, count=1, flags=re.M)
    else:
        text = re.sub(r"^global:\n", "global:\n  timezone: Asia/Shanghai\n", text, count=1, flags=re.M)
    main.write_text(text, encoding="utf-8")
    return rules


def shoot(url: str, out: Path, chromium: str, language: str) -> list[Path]:
    saved = []
    suffix = "" if language == "en" else f"-{language}"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        for name, viewport, scale in (
            (f"console-incidents{suffix}.png", {"width": 1280, "height": 900}, 1),
            (f"console-incidents-phone{suffix}.png", {"width": 390, "height": 844}, 2),
        ):
            context = browser.new_context(viewport=viewport, device_scale_factor=scale, locale=language)  # type: ignore[arg-type]
            context.add_cookies([{"name": LANGUAGE_COOKIE, "value": language, "url": url}])
            page = context.new_page()
            page.goto(f"{url}/login?next=/incidents")
            page.fill("input[name=user]", "oncall")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url("**/incidents")
            path = out / name
            page.screenshot(path=str(path), full_page="phone" not in name)
            saved.append(path)
            context.close()
        browser.close()
    return saved


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("docs") / "assets")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--language", choices=LANGUAGES, default="en", help="the language the console's switch chooses")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="alertrouter-screenshot-") as tmp:
        work = Path(tmp)
        proc = start_alertrouter(
            work,
            config=zoned_rules(work, args.language),
            database_url=f"sqlite+aiosqlite:///{work / 'console.db'}",
            env={
                "ALERTROUTER_BEARER_TOKEN": HOOK_TOKEN,
                "ALERTROUTER_API_TOKENS": f"screenshot:{API_TOKEN}",
                "ALERTROUTER_CONSOLE_USERS": f"oncall:{hash_password(PASSWORD, iterations=1000)}",
                "ALERTROUTER_ENGINE_INTERVAL": "200ms",
                "ALERTROUTER_DELIVER": "false",
                "ALERTROUTER_SCHEDULER": "false",
                "ALERTROUTER_LOG_LEVEL": "WARNING",
            },
        )
        try:
            seed(proc.url)
            for path in shoot(proc.url, args.out, args.chromium, args.language):
                print(path)
        finally:
            proc.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
