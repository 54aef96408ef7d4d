"""The `alertrouter` command: serve, check-config, db, simulate, routes, render, send-test, digest, oncall."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path

import uvicorn
from pydantic import ValidationError

from alertrouter import __version__
from alertrouter.app import create_app
from alertrouter.cli.digest import add_digest_parser
from alertrouter.cli.oncall import add_oncall_parser
from alertrouter.cli.passwords import add_hash_password_parser
from alertrouter.delivery.sendtest import send_test
from alertrouter.durations import parse_duration
from alertrouter.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES
from alertrouter.labels import format_label_set
from alertrouter.logs import configure_logging
from alertrouter.model import parse_time, utcnow
from alertrouter.pipeline.route import RouteMatch, match_routes, render_tree
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.timeinterval import route_mute
from alertrouter.render.samples import render_sample
from alertrouter.render.templates import Templates
from alertrouter.ruleset import ConfigError, Ruleset, load_ruleset, matcher_notes
from alertrouter.ruleset.build import compile_rules, unconfigured_channels
from alertrouter.settings import Settings, get_settings
from alertrouter.simulate import SimulationError, Step, simulate
from alertrouter.store.db import probe
from alertrouter.store.migrate import head_revision, upgrade
from alertrouter.store.urls import masked

__all__ = ["main"]

log = logging.getLogger("alertrouter")

_DESCRIPTION = """\
alertrouter sits between Prometheus Alertmanager and the people on call. It stores every
alert durably (SQLite by default, PostgreSQL in production), and cuts the noise before
anyone is paged.

Process settings come from ALERTROUTER_* environment variables (see README), e.g.
  ALERTROUTER_DATABASE_URL   sqlite:///alertrouter.db | postgresql://user:pw@host/db
  ALERTROUTER_BEARER_TOKEN   credential Alertmanager must send (or ALERTROUTER_BASIC_*)
  ALERTROUTER_CONFIG         rules directory (default: ./rules, else the shipped rules)
"""


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        k: v
        for k, v in {
            "config": getattr(args, "config", None),
            "host": getattr(args, "host", None),
            "port": getattr(args, "port", None),
            "database_url": getattr(args, "database_url", None),
        }.items()
        if v is not None
    }
    try:
        return get_settings(**overrides)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            name = "ALERTROUTER_" + "_".join(str(p) for p in err["loc"]).upper()
            print(f"settings: {name}: {err['msg'].removeprefix('Value error, ')}", file=sys.stderr)
        raise SystemExit(2) from None


def store_answers(settings: Settings) -> bool:
    """Whether the store of ALERTROUTER_DATABASE_URL answers; if not, one error line saying why."""
    problem = asyncio.run(probe(settings.database_url))
    if problem is not None:
        log.error("the store at ALERTROUTER_DATABASE_URL=%s cannot be used: %s", masked(settings.database_url), problem)
    return problem is None


def _load_rules(path: Path) -> Ruleset | None:
    try:
        return load_ruleset(path)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {path}", file=sys.stderr)
        return None


def cmd_check_config(args: argparse.Namespace) -> int:
    path = args.path or get_settings().config
    ruleset = _load_rules(path)
    if ruleset is None:
        return 1
    for note in matcher_notes(path):
        print(f"warning: {note}", file=sys.stderr)
    for name, missing in unconfigured_channels(ruleset).items():
        print(
            f"warning: channel {name}: {' and '.join(missing)} empty: its messages are recorded, not sent",
            file=sys.stderr,
        )
    print(f"ok: {len(ruleset.sources)} file(s) in {path}, config hash {ruleset.config_hash}")
    return 0


def _rules_locale() -> tuple[str, str]:
    """The rules' `global.language` and `global.timezone` (ALERTROUTER_CONFIG), or the code's defaults
    when the rules cannot be read (render previews templates; it needs no valid rules)."""
    try:
        rules = load_ruleset(get_settings().config)
    except (ConfigError, ValidationError, OSError):
        return DEFAULT_LANGUAGE, DEFAULT_TIMEZONE
    return rules.global_.language, rules.global_.timezone


def cmd_render(args: argparse.Namespace) -> int:
    language, timezone = args.language, args.timezone
    if language is None or timezone is None:
        rules_language, rules_timezone = _rules_locale()
        language, timezone = language or rules_language, timezone or rules_timezone
    try:
        templates = Templates(args.templates_dir or get_settings().templates_dir, language=language, timezone=timezone)
        print(render_sample(templates, args.template))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


def cmd_send_test(args: argparse.Namespace) -> int:
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    ruleset = _load_rules(args.config or settings.config)
    if ruleset is None:
        return 1
    try:
        results = asyncio.run(send_test(ruleset, args.receiver, templates=Templates(settings.templates_dir)))
    except KeyError:
        known = ", ".join(r.name for r in ruleset.receivers) or "none"
        print(f"no receiver {args.receiver!r} (known: {known})", file=sys.stderr)
        return 1
    if not results:
        print(f"receiver {args.receiver} has no channels", file=sys.stderr)
        return 1
    for r in results:
        print(f"{r.channel} ({r.type}): {'ok' if r.error is None else 'FAILED: ' + r.error}")
    return 0 if all(r.error is None for r in results) else 1


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    ruleset = _load_rules(settings.config)
    if ruleset is None:
        log.error("refusing to start: the rules in %s are invalid (see above)", settings.config)
        return 1
    if not store_answers(settings):
        return 1
    for note in matcher_notes(settings.config):  # Alertmanager logs these on load too
        log.warning("matcher %s", note)
    host, warning = settings.listen_host()
    if warning:
        log.warning("%s", warning)
    log.info("listening on %s:%d, store %s", host, settings.port, settings.database_url.split("://")[0])
    uvicorn.run(
        create_app(settings, ruleset, server=True),
        host=host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    if args.db_command == "upgrade":
        if not store_answers(settings):
            return 1
        upgrade(settings.database_url, args.revision)
        print(f"database at {args.revision} ({head_revision()})")
    return 0


def _pipeline(path: Path | None) -> CompiledRules | None:
    ruleset = _load_rules(path or get_settings().config)
    return None if ruleset is None else compile_rules(ruleset)


def cmd_simulate(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args.config)
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


def cmd_routes_test(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args.config)
    if pipeline is None:
        return 1
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
        if (line := _interval_line(pipeline, match, at)) is not None:
            print(line)
    if args.expect is not None and args.expect.split(",") != receivers:
        print(f"expected {args.expect}, got {','.join(receivers)}", file=sys.stderr)
        return 1
    return 0


def _interval_line(pipeline: CompiledRules, match: RouteMatch, at: datetime) -> str | None:
    """Whether the route's time intervals let it send at `at`, and until when."""
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
    until = f" until {change.isoformat()}" if change is not None else ""
    return f"{match.receiver} via {match.path} at {at.isoformat()}: {state}{until} ({'; '.join(configured)})"


def cmd_routes_show(args: argparse.Namespace) -> int:
    pipeline = _pipeline(args.config)
    if pipeline is None:
        return 1
    print(render_tree(pipeline.route))
    return 0


def _time(value: str) -> datetime:
    if (t := parse_time(value)) is None:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {value!r}")
    return t


def _duration(value: str) -> timedelta:
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="alertrouter", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"alertrouter {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = sub.add_parser(
        "serve",
        help="run the HTTP server (migrates the database first unless ALERTROUTER_AUTO_MIGRATE=false)",
        description="Run the server. Refuses to start if the rules are invalid. Without a credential "
        "(ALERTROUTER_BEARER_TOKEN or ALERTROUTER_BASIC_USERNAME/PASSWORD) it listens on loopback only.",
    )
    serve.add_argument("--config", type=Path, help="rules directory or file (env ALERTROUTER_CONFIG)")
    serve.add_argument("--host", help="listen address (env ALERTROUTER_HOST)")
    serve.add_argument("--port", type=int, help="listen port (env ALERTROUTER_PORT, default 9095)")
    serve.add_argument("--database-url", help="sqlite:///path.db or postgresql://... (env ALERTROUTER_DATABASE_URL)")
    serve.set_defaults(func=cmd_serve)

    check = sub.add_parser(
        "check-config",
        help="validate the rules; prints file:path: problem for each and exits 1",
        description="Validate rules like `amtool check-config`: every problem is printed as "
        "FILE:PATH: MESSAGE, and the exit status is 1 if there is any.",
    )
    check.add_argument("path", nargs="?", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    check.set_defaults(func=cmd_check_config)

    db = sub.add_parser("db", help="database schema migrations (Alembic)")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="DB_COMMAND")
    up = db_sub.add_parser("upgrade", help="apply migrations up to REVISION (default head)")
    up.add_argument("revision", nargs="?", default="head")
    up.add_argument("--database-url", help="sqlite:///path.db or postgresql://... (env ALERTROUTER_DATABASE_URL)")
    db.set_defaults(func=cmd_db)

    sim = sub.add_parser(
        "simulate",
        help="run payload files through the whole engine and print decisions and messages",
        description="Apply Alertmanager webhook bodies (or API v2 alert arrays) in order, each at the time given "
        "by --at or read off its alerts' timestamps, against an empty throwaway store, then let the clock run "
        "on (--for). Prints every alert's decision and every message that would be sent. --json prints "
        '{"alerts": [...], "incidents": [...], "notifications": [...]} (see README).',
    )
    sim.add_argument("payloads", nargs="+", type=Path, metavar="PAYLOAD.json")
    sim.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    sim.add_argument("--at", type=_time, action="append", help="RFC 3339 time of a payload (repeat per payload)")
    sim.add_argument(
        "--for",
        dest="run_for",
        type=_duration,
        default=timedelta(minutes=10),
        help="how long the clock runs on after the last payload (default 10m)",
    )
    sim.add_argument("--json", action="store_true", help="print a stable JSON object instead of text")
    sim.set_defaults(func=cmd_simulate)

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
        type=_time,
        help="RFC 3339 time at which to say whether each route's time intervals let it send (default: now)",
    )
    test.set_defaults(func=cmd_routes_test)
    show = routes_sub.add_parser("show", help="print the route tree")
    show.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    show.set_defaults(func=cmd_routes_show)

    render = sub.add_parser(
        "render",
        help="preview a message template with a sample incident",
        description="Render TEMPLATE (e.g. dingtalk/firing.md, email/cluster.html) with a built-in sample "
        "notification and print it. User templates in --templates-dir (or ALERTROUTER_TEMPLATES_DIR) "
        "override the shipped ones file by file.",
    )
    render.add_argument("template", metavar="TEMPLATE", help="CHANNEL/KIND.FORMAT, e.g. wecom/resolved.md")
    render.add_argument("--sample", action="store_true", help="use the built-in sample (the only source today)")
    render.add_argument("--templates-dir", type=Path, help="user templates directory")
    render.add_argument(
        "--language",
        choices=LANGUAGES,
        help=f"default: the rules' global.language (zh-CN in the shipped rules), else {DEFAULT_LANGUAGE}",
    )
    render.add_argument(
        "--timezone",
        help=f"IANA time zone of the times shown (default: the rules' global.timezone, else {DEFAULT_TIMEZONE})",
    )
    render.set_defaults(func=cmd_render)

    send = sub.add_parser(
        "send-test",
        help="send one test message through each channel of RECEIVER and print the vendor's answer",
        description="Send a test message now through every channel of RECEIVER (bypassing the outbox, "
        "rate budget and retries) and print ok or the error per channel; exit 1 if any failed. Secrets "
        "come from the environment as for `serve`.",
    )
    send.add_argument("receiver", metavar="RECEIVER")
    send.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    send.set_defaults(func=cmd_send_test)

    add_digest_parser(sub)
    add_oncall_parser(sub)
    add_hash_password_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
