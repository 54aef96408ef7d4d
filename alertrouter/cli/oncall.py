"""`alertrouter oncall who [SCHEDULE] [--at TIME]`: who is on call now (or then) and next, from the rules."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any

from alertrouter.model import utcnow
from alertrouter.pipeline.oncall import Rota, Schedule, Shift
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.oncall import build_rota
from alertrouter.ruleset.schedule import zone
from alertrouter.settings import get_settings

__all__ = ["add_oncall_parser", "cmd_oncall_who", "parse_when"]

_DESCRIPTION = """\
Who is on call for each schedule of the rules (`oncall.schedules`): the person now, until when,
and who comes next. Read from the rules alone (no database, no server).

  alertrouter oncall who                         every schedule, now
  alertrouter oncall who gpu-primary             one schedule
  alertrouter oncall who --at 'tomorrow 03:00'   at 03:00 tomorrow in the schedule's time zone
  alertrouter oncall who --at 2026-12-24T22:00+08:00

TIME is ISO 8601 (with an offset, or read in each schedule's time zone without one), or
'HH:MM', 'today HH:MM', 'tomorrow HH:MM' in each schedule's time zone.
"""

_RELATIVE = re.compile(r"^(?:(today|tomorrow)\s+)?([01]?\d|2[0-3]):([0-5]\d)$")


def parse_when(text: str, tz: tzinfo, now: datetime) -> datetime:
    """An instant from TIME (see the description), local times read in `tz`."""
    value = text.strip().lower()
    m = _RELATIVE.match(value)
    if m is not None:
        day = now.astimezone(tz).date() + timedelta(days=1 if m.group(1) == "tomorrow" else 0)
        return datetime.combine(day, time(int(m.group(2)), int(m.group(3))), tzinfo=tz)
    try:
        parsed = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"--at {text!r}: expected ISO 8601, 'HH:MM', 'today HH:MM' or 'tomorrow HH:MM'") from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=tz)


def _check_at(value: str) -> str:
    try:
        parse_when(value, zone("UTC"), utcnow())
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def add_oncall_parser(sub: Any) -> None:
    """Adds `oncall` to the `alertrouter` subcommands."""
    p = sub.add_parser(
        "oncall",
        help="who is on call (from the rules' oncall.schedules)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    oncall_sub = p.add_subparsers(dest="oncall_command", required=True, metavar="ONCALL_COMMAND")
    who = oncall_sub.add_parser(
        "who",
        help="who is on call now (or --at TIME) and next, per schedule",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    who.add_argument("schedule", nargs="?", metavar="SCHEDULE", help="one schedule (default: every one)")
    who.add_argument("--at", type=_check_at, metavar="TIME", help="when to look (default: now)")
    who.add_argument("--config", type=Path, help="rules directory or file (default: ALERTROUTER_CONFIG)")
    who.set_defaults(func=cmd_oncall_who)


def _person(rota: Rota, name: str | None) -> str:
    if name is None:
        return "(no one)"
    person = rota.people.get(name)
    return f"{person.label} ({name})" if person is not None and person.label != name else name


def _local(at: datetime | None, schedule: Schedule) -> str:
    return "-" if at is None else at.astimezone(schedule.zone).strftime("%Y-%m-%d %H:%M %Z")


def _lines(rota: Rota, schedule: Schedule, shifts: list[Shift]) -> list[str]:
    out = [f"{schedule.name} ({schedule.timezone})"]
    for label, shift in zip(("now", "next"), shifts, strict=False):
        who = _person(rota, shift.oncall.person)
        source = " [override]" if shift.oncall.source == "override" else ""
        since = "" if label == "now" else f"from {_local(shift.start, schedule)} "
        until = f"until {_local(shift.end, schedule)}" if shift.end else "no change within a year"
        out.append(f"  {label + ':':6}{who}{source}, {since}{until}")
    return out


def cmd_oncall_who(args: argparse.Namespace) -> int:
    path = args.config or get_settings().config
    try:
        ruleset = load_ruleset(path)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return 1
    rota = build_rota(ruleset.oncall)
    if not rota.schedules:
        print("no on-call schedules in the rules (oncall.schedules)", file=sys.stderr)
        return 1
    names = [args.schedule] if args.schedule else list(rota.schedules)
    unknown = [n for n in names if n not in rota.schedules]
    if unknown:
        print(f"unknown schedule {unknown[0]!r} (known: {', '.join(rota.schedules)})", file=sys.stderr)
        return 1
    now = utcnow()
    for name in names:
        schedule = rota.schedules[name]
        at = parse_when(args.at, schedule.zone, now) if args.at else now
        print("\n".join(_lines(rota, schedule, schedule.shifts(at, 2))))
    return 0
