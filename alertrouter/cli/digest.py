"""`alertrouter digest --preview | --send`: one receiver's weekly digest from the store, on demand."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from alertrouter.digest.period import due_period, parse_week, shift_week, week_of
from alertrouter.digest.send import DigestRunner, DigestTarget
from alertrouter.message.i18n import LANGUAGES
from alertrouter.model import RunResult, utcnow
from alertrouter.process.logs import configure_logging
from alertrouter.render.templates import Templates
from alertrouter.ruleset import ConfigError, Ruleset, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.ruleset.schedule import zone
from alertrouter.settings import Settings, get_settings
from alertrouter.store import Database
from alertrouter.store.db import probe
from alertrouter.store.migrate import upgrade
from alertrouter.store.urls import masked

__all__ = ["add_digest_parser", "cmd_digest"]

_DESCRIPTION = """\
The weekly digest of a receiver with a `digest:` block in the rules, from the store
(ALERTROUTER_DATABASE_URL): totals by severity, alertname, node and region; the noise cut per
mechanism and rule; the noisiest alerts and nodes; flapping alerts; nodes with repeated XID
errors; time to resolve and to acknowledge; charts.

  --preview   render only: the text version to stdout, or with --out the HTML (charts inlined
              as data: URIs, so the file opens in a browser)
  --send      claim the week as the scheduler does and email it; a week already sent is left
              alone unless --force is given (the resend is logged)

The week defaults to the latest one whose digest is due (the previous ISO week once the
receiver's schedule has passed), in the receiver's time zone. The digest is written in the
receiver's language (`language:` on the receiver, else `global.language`); --language and
--timezone override both for a preview.
"""


def add_digest_parser(sub: Any) -> None:
    """Adds `digest` to the `alertrouter` subcommands (`sub` is build_parser's subparsers action)."""
    p = sub.add_parser(
        "digest",
        help="preview or send a weekly digest email",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--preview", action="store_true", help="render the digest without sending it")
    mode.add_argument("--send", action="store_true", help="claim the week and send the digest email")
    p.add_argument("--week", type=_week, help="ISO week YYYY-Www, e.g. 2026-W47 (default: the latest due)")
    p.add_argument("--receiver", help="receiver with a digest: block (default: the first one)")
    p.add_argument("--out", type=Path, metavar="FILE.html", help="--preview: write standalone HTML here")
    p.add_argument("--force", action="store_true", help="--send: resend a week already sent")
    p.add_argument(
        "--timezone", help="--preview: the week's time zone (default: the receiver's digest, else global.timezone)"
    )
    p.add_argument(
        "--language", choices=LANGUAGES, help="--preview: the digest's language (default: the receiver's, else global)"
    )
    p.add_argument("--config", type=Path, help="rules directory or file (env ALERTROUTER_CONFIG)")
    p.add_argument("--database-url", help="sqlite:///path.db or postgresql://... (env ALERTROUTER_DATABASE_URL)")
    p.set_defaults(func=cmd_digest)


def _week(value: str) -> str:
    try:
        parse_week(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _setup(args: argparse.Namespace) -> tuple[Settings, Ruleset] | None:
    overrides = {k: v for k, v in {"config": args.config, "database_url": args.database_url}.items() if v is not None}
    try:
        settings = get_settings(**overrides)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            print(
                f"settings: ALERTROUTER_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}", file=sys.stderr
            )
        return None
    configure_logging(settings.log_level, settings.log_format)
    try:
        ruleset = load_ruleset(settings.config)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return None
    return settings, ruleset


def _target(runner: DigestRunner, name: str | None) -> DigestTarget | None:
    if name is not None:
        return runner.targets[name]
    return next(iter(runner.targets.values()), None)


def cmd_digest(args: argparse.Namespace) -> int:
    setup = _setup(args)
    if setup is None:
        return 2
    settings, ruleset = setup
    return asyncio.run(_run(args, settings, ruleset))


async def _run(args: argparse.Namespace, settings: Settings, ruleset: Ruleset) -> int:
    problem = await probe(settings.database_url)
    if problem is not None:
        where = masked(settings.database_url)
        print(f"the store at ALERTROUTER_DATABASE_URL={where} cannot be used: {problem}", file=sys.stderr)
        return 2
    if args.send and settings.auto_migrate:
        await asyncio.to_thread(upgrade, settings.database_url)
    db = Database(settings.database_url)
    try:
        runner = DigestRunner(
            db, ruleset, compile_rules(ruleset), templates=Templates(settings.templates_dir), holder="cli"
        )
        if args.receiver is not None and args.receiver not in runner.targets:
            known = ", ".join(runner.targets) or "none"
            print(f"no receiver {args.receiver!r} with a digest: block (known: {known})", file=sys.stderr)
            return 2
        target = _target(runner, args.receiver)
        if args.send:
            return await _send(runner, target, args)
        tz = zone(args.timezone or (target.tz.key if target else ruleset.global_.timezone))
        now = utcnow()
        week = args.week or (due_period(now, target.schedule, tz) if target else shift_week(week_of(now, tz), -1))
        _, rendered = await runner.build(target, week, tz=tz, language=args.language, inline=True)
        if args.out is None:
            print(rendered.text, end="")
        else:
            await asyncio.to_thread(args.out.write_text, rendered.html, encoding="utf-8")
            print(f"wrote {args.out} ({len(rendered.html) // 1024} KiB): {rendered.subject}", file=sys.stderr)
        return 0
    finally:
        await db.dispose()


async def _send(runner: DigestRunner, target: DigestTarget | None, args: argparse.Namespace) -> int:
    if target is None:
        print("no receiver has a digest: block in the rules", file=sys.stderr)
        return 2
    if target.channel is None:
        print(f"channel {target.channel_name} is unconfigured (no SMTP host): nothing sent", file=sys.stderr)
        return 1
    week = args.week or due_period(utcnow(), target.schedule, target.tz)
    outcome = await runner.run(target, week, force=args.force)
    if outcome.result is RunResult.SENT:
        print(f"sent the digest of {week} for {target.receiver} to {', '.join(target.recipients)}")
        return 0
    if outcome.result is RunResult.CLAIMED:
        print(
            f"not sent: the digest of {week} for {target.receiver} is {outcome.detail.get('status')} "
            f"({outcome.detail.get('holder')}); --force resends a sent one",
            file=sys.stderr,
        )
        return 1
    print(f"not sent ({outcome.result}): {outcome.detail.get('error', '')}", file=sys.stderr)
    return 1
