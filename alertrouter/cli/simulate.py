"""`alertrouter simulate`: payload files through the real ingest and engine, every decision and message printed."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from alertrouter.cli.rules import at_time, load_pipeline
from alertrouter.durations import parse_duration
from alertrouter.labels import format_label_set
from alertrouter.replay.simulate import SimulationError, Step, simulate

__all__ = ["add_simulate_parser", "cmd_simulate"]


def cmd_simulate(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(args.config)
    if pipeline is None:
        return 1
    if args.at and len(args.at) not in (1, len(args.payloads)):
        print("simulate: give --at once (for the first payload) or once per payload", file=sys.stderr)
        return 2
    steps = []
    for i, path in enumerate(args.payloads):
        at = args.at[i] if args.at and i < len(args.at) else None
        steps.append(Step(str(path), path.read_bytes(), at))
    try:
        outcome = asyncio.run(simulate(pipeline, steps, run_for=args.run_for))
    except SimulationError as exc:
        print(f"simulate: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(outcome.as_json(), indent=2, ensure_ascii=False))
        return 0
    print(f"alerts ({len(outcome.alerts)}):")
    for a in outcome.alerts:
        labels = a["labels"]
        what = " ".join(f"{k}={labels[k]}" for k in ("alertname", "node", "Hostname", "instance", "gpu") if k in labels)
        if "alertname" not in labels:
            what = format_label_set(labels)
        keys = ("inhibited_by", "inhibit_rule", "held_until", "next_send_at", "muted_by_interval", "mute_ends_at")
        why = ", ".join(f"{k}={a[k]}" for k in keys if k in a)
        print(f"  {a['fingerprint']}  {a['status']:<8} {a['decision']:<10} {what}" + (f"  ({why})" if why else ""))
    print(f"incidents ({len(outcome.incidents)}):")
    for inc in outcome.incidents:
        parent = f"  -> {inc['parent']}" if inc["parent"] else ""
        print(f"  {inc['status']:<8} {inc['severity']:<8} {inc['headline']}{parent}")
    print(f"notifications ({len(outcome.notifications)}):")
    for n in outcome.notifications:
        print(f"  {n['at']}  {n['receiver']}  {n['reason']}")
        print("    " + n["text"].replace("\n", "\n    "))
    return 0


def _duration(value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_simulate_parser(sub: Any) -> None:
    """Adds `simulate` to the `alertrouter` subcommands."""
    sim = sub.add_parser(
        "simulate",
        help="run payload files through the whole engine and print decisions and messages",
        description="Apply Alertmanager webhook bodies (or API v2 alert arrays) in order, each at the time given "
        "by --at or read off its alerts' timestamps, against an empty throwaway store, then let the clock run "
        "on (--for). Prints every alert's decision and every message that would be sent. --json prints "
        '{"alerts": [...], "incidents": [...], "notifications": [...]} (docs/en/api.md).',
    )
    sim.add_argument("payloads", nargs="+", type=Path, metavar="PAYLOAD.json")
    sim.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    sim.add_argument("--at", type=at_time, action="append", help="RFC 3339 time of a payload (repeat per payload)")
    sim.add_argument(
        "--for",
        dest="run_for",
        type=_duration,
        default=timedelta(minutes=10),
        help="how long the clock runs on after the last payload (default 10m)",
    )
    sim.add_argument("--json", action="store_true", help="print a stable JSON object instead of text")
    sim.set_defaults(func=cmd_simulate)
