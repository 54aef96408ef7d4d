"""`alertrouter routes test | show`: the receivers a label set reaches, and the route tree, like amtool."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime, tzinfo
from pathlib import Path
from typing import Any

from alertrouter.cli.rules import at_time, load_pipeline, load_rules
from alertrouter.model import utcnow
from alertrouter.pipeline.route import RouteMatch, match_routes, render_tree
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.timeinterval import route_mute
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.settings import get_settings

__all__ = ["add_routes_parser", "cmd_routes_show", "cmd_routes_test"]


def cmd_routes_test(args: argparse.Namespace) -> int:
    ruleset = load_rules(args.config or get_settings().config)
    if ruleset is None:
        return 1
    pipeline = compile_rules(ruleset)
    tz = zone(ruleset.global_.timezone)
    labels: dict[str, str] = {}
    for item in args.labels:
        name, sep, value = item.partition("=")
        if not sep or not name:
            print(f"routes test: expected label=value, got {item!r}", file=sys.stderr)
            return 2
        labels[name] = value.strip('"')
    enriched = pipeline.nodes.enrich(labels)
    matches = match_routes(pipeline.route, enriched)
    receivers = [m.receiver for m in matches]
    if args.verbose:
        for match in matches:
            print(f"{match.receiver}  via {match.path}")
    else:
        print(",".join(receivers))
    at = args.at or utcnow()
    for match in matches:  # only routes with time intervals have a line: the list above stays amtool's
        if (line := _interval_line(pipeline, match, at, tz)) is not None:
            print(line)
    if args.expect is not None and args.expect.split(",") != receivers:
        print(f"expected {args.expect}, got {','.join(receivers)}", file=sys.stderr)
        return 1
    return 0


def _local(t: datetime, tz: tzinfo) -> str:
    """`2026-11-26 04:00:00 CST`: a time as every other place shows it, in `global.timezone`."""
    return t.astimezone(tz).strftime("%Y-%m-%d %H:%M:%S %Z")


def _interval_line(pipeline: CompiledRules, match: RouteMatch, at: datetime, tz: tzinfo) -> str | None:
    """Whether the route's time intervals let it send at `at`, and until when (times in `tz`)."""
    if not match.mute_time_intervals and not match.active_time_intervals:
        return None
    mute, change = route_mute(
        pipeline.time_intervals, mute=match.mute_time_intervals, active=match.active_time_intervals, at=at
    )
    if mute is None:
        state = "sends"
    elif mute.outside_active:
        state = f"muted: outside active_time_intervals [{', '.join(mute.intervals)}]"
    else:
        state = f"muted by mute_time_intervals [{', '.join(mute.intervals)}]"
    configured = [
        f"{key} [{', '.join(names)}]"
        for key, names in (
            ("mute_time_intervals", match.mute_time_intervals),
            ("active_time_intervals", match.active_time_intervals),
        )
        if names
    ]
    until = f" until {_local(change, tz)}" if change is not None else ""
    return f"{match.receiver} via {match.path} at {_local(at, tz)}: {state}{until} ({'; '.join(configured)})"


def cmd_routes_show(args: argparse.Namespace) -> int:
    pipeline = load_pipeline(args.config)
    if pipeline is None:
        return 1
    print(render_tree(pipeline.route))
    return 0


def add_routes_parser(sub: Any) -> None:
    """Adds `routes` to the `alertrouter` subcommands."""
    routes = sub.add_parser("routes", help="inspect the route tree (like amtool config routes)")
    routes_sub = routes.add_subparsers(dest="routes_command", required=True, metavar="ROUTES_COMMAND")
    test = routes_sub.add_parser(
        "test",
        help="print the receivers a label set reaches",
        description="Print the receivers the given labels reach, comma-separated, like `amtool config routes test`. "
        "The node key and topology labels are added first, as the engine does. A route with "
        "mute_time_intervals or active_time_intervals adds a line saying whether it sends now (or --at).",
    )
    test.add_argument("labels", nargs="+", metavar="label=value")
    test.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    test.add_argument("--expect", help="comma-separated receivers; exit 1 if the result differs")
    test.add_argument("-v", "--verbose", action="store_true", help="print each receiver with the route that chose it")
    test.add_argument(
        "--at",
        type=at_time,
        help="RFC 3339 time at which to say whether each route's time intervals let it send (default: now)",
    )
    test.set_defaults(func=cmd_routes_test)
    show = routes_sub.add_parser("show", help="print the route tree")
    show.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    show.set_defaults(func=cmd_routes_show)
