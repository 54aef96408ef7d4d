"""Renders docs/assets/digest-sample.{html,txt,png}: the weekly digest of a synthetic week on 1,000 GPU nodes.

    .venv/bin/python tests/bench/digest_sample.py --language en --out docs/assets/digest-sample.html
    .venv/bin/python tests/bench/digest_sample.py --language zh-CN --out docs/assets/digest-sample-zh-CN.html \
        --screenshot docs/assets/digest-zh-CN.png

The week (2026-W47, Asia/Shanghai, the shipped rules) goes through the real Ingestor and EngineRunner
on a temporary SQLite store with a manual clock: every day a few dozen nodes run hot for a while; one
GPU flaps; a few nodes report XID errors, some repeatedly; one GPU reports Xid 48 again eight days after
the first (the Wednesday before the week) and another fails to remap a memory row, so the `rma:` rules
list two RMA candidates with their evidence; two nodes go down (their GPU alerts are inhibited); info
alerts go to the weekly-digest receiver; and on Wednesday the storm of
tests/e2e/test_storm_delivery_e2e.py: GPUHighTemp on all 8 GPUs of 1,000 nodes (dcgm-exporter labels),
while a rack of 40 nodes goes dark (NodeDown and GPUFallenOffBus), rolled up into cluster incidents.
Some incidents are acknowledged. Nothing is sent: the digest is rendered with its charts inlined as
data: URIs (so the HTML opens on its own), plus the text part and the alerts-per-day chart as PNG, in
--language (default: the receiver's, as the shipped rules say). --screenshot also captures the HTML as a
reader sees it, with Debian's Chromium through Playwright (the Chinese drawn with fonts-noto-cjk).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from alertrouter.digest.period import week_bounds
from alertrouter.digest.send import DigestRunner
from alertrouter.message.i18n import LANGUAGES
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.store import Database
from alertrouter.store.actions import acknowledge_incident
from alertrouter.store.migrate import upgrade
from alertrouter.store.tables import IncidentRow

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests"))  # the documented command runs from the repository root

from support.digestweek import WeekDriver  # noqa: E402

WEEK, TZ = "2026-W47", "Asia/Shanghai"
NODES, RACK = 1000, 40


def node(n: int) -> str:
    return f"gpu-node-{n:04d}"


def where(n: int) -> dict[str, str]:
    return {"region": "north" if n % 2 else "south", "rack": f"r{n // 40:02d}"}


def gpu(n: int, g: int, alertname: str = "GPUHighTemp", severity: str = "warning", **extra: str) -> dict[str, str]:
    name = node(n)
    return {
        "alertname": alertname,
        "Hostname": name,
        "instance": f"{name}:9400",
        "gpu": str(g),
        "UUID": f"GPU-{n:04d}-{g}",
        "modelName": "NVIDIA H800",
        "job": "dcgm",
        "severity": severity,
        **where(n),
        **extra,
    }


def down(n: int) -> dict[str, str]:
    return {"alertname": "NodeDown", "instance": f"{node(n)}:9100", "job": "node", "severity": "critical", **where(n)}


Event = tuple[datetime, str, list[dict[str, str]]]  # (when, "fire" | "resolve", alerts)


def week_events(start: datetime, rng: random.Random) -> list[Event]:
    events: list[Event] = []

    def episode(at: datetime, minutes: int, alerts: list[dict[str, str]]) -> None:
        events.append((at, "fire", alerts))
        events.append((at + timedelta(minutes=minutes), "resolve", alerts))

    for day in range(7):
        base = start + timedelta(days=day)
        for _ in range(rng.randint(18, 30)):  # hot GPUs, a handful of nodes at a time
            n = rng.randrange(RACK, NODES)
            gpus = rng.sample(range(8), rng.randint(1, 4))
            at = base + timedelta(hours=rng.randint(8, 21), minutes=rng.choice((0, 10, 20, 30, 40, 50)))
            episode(at, rng.randint(15, 120), [gpu(n, g) for g in gpus])
        for _ in range(rng.randint(2, 5)):  # info: sustained utilisation, the weekly-digest route
            n = rng.randrange(RACK, NODES)
            at = base + timedelta(hours=rng.randint(9, 18))
            episode(at, rng.randint(60, 300), [gpu(n, rng.randrange(8), "GPUHighUtilSustained", "info")])
        for _ in range(rng.randint(0, 2)):  # one-off XID errors
            n, g = rng.randrange(RACK, NODES), rng.randrange(8)
            at = base + timedelta(hours=rng.randint(0, 23), minutes=5)
            episode(at, rng.randint(10, 60), [gpu(n, g, "GPUXidError", "critical", xid=rng.choice(("13", "31", "43")))])
    tue = start + timedelta(days=1, hours=14)
    for i in range(5):  # a flapping GPU
        episode(tue + timedelta(minutes=20 * i), 8, [gpu(123, 5)])
    for day, hour, xid, g in ((-5, 3, "48", 3), (3, 22, "48", 3), (4, 6, "13", 3), (2, 11, "31", 1), (5, 2, "31", 6)):
        n = 42 if g == 3 else 890  # GPU faults on two nodes; node 42 GPU 3 repeats XID 48: an RMA candidate
        at = start + timedelta(days=day, hours=hour, minutes=7)
        episode(at, 45, [gpu(n, g, "GPUXidError", "critical", xid=xid)])
    remap = start + timedelta(days=5, hours=9, minutes=12)  # a row-remap failure: an RMA candidate at once
    episode(remap, 30, [gpu(611, 2, "GPURowRemapFailure", "critical")])
    for day, n in ((1, 517), (5, 733)):  # nodes down with their GPU alerts (inhibited)
        at = start + timedelta(days=day, hours=4, minutes=30)
        episode(at, 95, [down(n), *(gpu(n, g) for g in range(8))])
    storm = start + timedelta(days=2, hours=15)  # Wednesday 15:00: the 1,000-node storm
    rack = [down(n) for n in range(RACK)] + [
        gpu(n, g, "GPUFallenOffBus", "critical") for n in range(RACK) for g in range(8)
    ]
    heat = [gpu(n, g) for n in range(RACK, NODES) for g in range(8)]
    episode(storm, 40, heat)
    episode(storm + timedelta(minutes=1), 150, rack)
    return sorted(events, key=lambda e: (e[0], e[1] == "fire"))  # resolves before fires at the same time


async def build(out: Path, db_path: Path, language: str | None) -> None:
    url = f"sqlite+aiosqlite:///{db_path}"
    await asyncio.to_thread(upgrade, url)
    db = Database(url, sqlite_synchronous="NORMAL")
    ruleset = load_ruleset(REPO / "rules", {})
    pipeline = compile_rules(ruleset)
    tz = zone(TZ)
    start, end = week_bounds(WEEK, tz)
    driver = WeekDriver(db, pipeline, start - timedelta(days=6))  # the GPU history reaches before the week
    rng = random.Random(47)
    events = week_events(start, rng)
    began = time.perf_counter()
    acked = 0
    try:
        for i, (at, what, alerts) in enumerate(events):
            if at > driver.clock.now:
                driver.at(at)
            await (driver.fire(alerts) if what == "fire" else driver.resolve(alerts))
            await driver.settle()
            if what == "fire" and rng.random() < 0.5:  # someone on call acknowledges about half
                acked += await acknowledge_new(db, driver.clock.now, rng)
            if i % 50 == 0:
                print(f"  {i}/{len(events)} events, simulated {driver.clock.now:%a %H:%M}", file=sys.stderr)
        print(
            f"seeded {len(events)} events in {time.perf_counter() - began:.0f}s ({acked} acknowledgements)",
            file=sys.stderr,
        )
        send_at = end + timedelta(hours=9)  # Monday 09:00 local: when the scheduler would send it
        runner = DigestRunner(db, ruleset, pipeline, templates=Templates(), holder="sample", clock=lambda: send_at)
        target = runner.targets["weekly-digest"]
        _, html = await runner.build(target, WEEK, inline=True, language=language)
        await asyncio.to_thread(write, out, html.html, f"Subject: {html.subject}\n\n{html.text}", html.charts[0].png)
        print(f"wrote {out}, {out.with_suffix('.txt')}, {out.with_suffix('.png')}: {html.subject}", file=sys.stderr)
    finally:
        await db.dispose()


def write(out: Path, html: str, text: str, png: bytes) -> None:
    out.write_text(html, encoding="utf-8")
    out.with_suffix(".txt").write_text(text, encoding="utf-8")
    out.with_suffix(".png").write_bytes(png)


async def acknowledge_new(db: Database, now: datetime, rng: random.Random) -> int:
    """Acknowledge, a few minutes later, firing incidents opened just now (the clock is not moved)."""
    async with db.write() as session:
        ids = (
            await session.scalars(
                select(IncidentRow.id).where(
                    IncidentRow.status == "firing",
                    IncidentRow.acknowledged_at.is_(None),
                    IncidentRow.opened_at >= now - timedelta(minutes=2),
                )
            )
        ).all()
        for incident_id in ids:
            later = now + timedelta(minutes=rng.randint(2, 25))
            await acknowledge_incident(session, incident_id=incident_id, by="oncall", now=later)
        await session.commit()
    return len(ids)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "assets" / "digest-sample.html")
    parser.add_argument("--language", choices=LANGUAGES, help="default: the weekly-digest receiver's")
    parser.add_argument("--screenshot", type=Path, metavar="FILE.png", help="capture the HTML with Chromium")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="alertrouter-digest-sample-") as tmp:
        asyncio.run(build(args.out, Path(tmp) / "week.db", args.language))
    if args.screenshot is not None:
        screenshot(args.out, args.screenshot, args.chromium)
        print(f"wrote {args.screenshot}", file=sys.stderr)


def screenshot(source: Path, out: Path, chromium: str) -> None:
    """The whole digest as a mail reader 700 px wide shows it."""
    from playwright.sync_api import sync_playwright  # only for --screenshot

    args = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=args)
        context = browser.new_context(viewport={"width": 700, "height": 900}, device_scale_factor=1)
        page = context.new_page()
        page.goto(source.resolve().as_uri())
        page.screenshot(path=str(out), full_page=True)
        browser.close()


if __name__ == "__main__":
    main()
