"""`alertrouter maintenance start|end|list`: nodes whose alerts are stored and shown but not sent."""

from __future__ import annotations

import argparse
import asyncio
import getpass
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TextIO

from pydantic import ValidationError

from alertrouter.maintenance import service
from alertrouter.maintenance.requests import RequestError, StartRequest, start_request
from alertrouter.model import utcnow
from alertrouter.settings import get_settings
from alertrouter.store import Database
from alertrouter.store.db import probe
from alertrouter.store.tables import MaintenanceRow
from alertrouter.store.urls import masked

__all__ = ["add_maintenance_parser", "write_table"]

_DESCRIPTION = """\
A node in maintenance (a drain, a repair, an RMA) keeps its alerts stored and shown in the console
and the API, decided `maintenance`, but nothing about them is sent, and a resolve meanwhile is not
told either. When the window ends (at its time, or with `end`) while an alert of the node still
fires, it is sent at once. A node is named as its alerts name it, or by an address or alias that
the topology or the lookup maps to it.

  alertrouter maintenance start gpu-node-07 gpu-node-08 --for 4h --reason "RMA ticket 4711"
  alertrouter maintenance end gpu-node-07
  alertrouter maintenance list            in force, to come, and ended in the last 7 days

Written to the store of ALERTROUTER_DATABASE_URL (the same settings as `serve`), which takes it
on its next pass; `--by` says who (default: cli:<your login name>). At most 90 days, a reason of
at most 500 characters, 1000 nodes at once.
"""


def add_maintenance_parser(sub: Any) -> None:
    """Adds `maintenance` to the `alertrouter` subcommands."""
    p = sub.add_parser(
        "maintenance",
        help="nodes in maintenance: their alerts are shown, not sent (start, end, list)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--database-url", help="sqlite:///path.db or postgresql://... (env ALERTROUTER_DATABASE_URL)")
    actions = p.add_subparsers(dest="action", required=True, metavar="start|end|list")
    start = actions.add_parser("start", help="put nodes in maintenance from now", description=_DESCRIPTION)
    start.add_argument("nodes", nargs="+", metavar="NODE")
    start.add_argument("--for", dest="duration", required=True, help="how long: 4h, 2d (at most 90d)")
    start.add_argument("--reason", default="", help="why: shown with the node's alerts (at most 500 characters)")
    start.add_argument("--by", default=None, help="who (default: cli:<login name>)")
    end = actions.add_parser("end", help="end nodes' maintenance now: what still fires is sent at once")
    end.add_argument("nodes", nargs="+", metavar="NODE")
    end.add_argument("--by", default=None, help="who (default: cli:<login name>)")
    actions.add_parser("list", help="windows in force, to come, and ended in the last 7 days")
    p.set_defaults(func=cmd_maintenance)


def _who(given: str | None) -> str:
    if given:
        return given
    try:
        return f"cli:{getpass.getuser()}"
    except (KeyError, OSError):  # no login name (a container's numeric user)
        return "cli"


def cmd_maintenance(args: argparse.Namespace) -> int:
    overrides = {"database_url": args.database_url} if args.database_url else {}
    try:
        url = get_settings(**overrides).database_url
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            print(
                f"settings: ALERTROUTER_{'_'.join(str(p) for p in err['loc']).upper()}: {err['msg']}", file=sys.stderr
            )
        return 2
    now = utcnow()
    try:
        if args.action == "start":
            request = start_request(args.nodes, args.duration, args.reason, _who(args.by), now=now)
            work: Callable[[Database], Awaitable[int]] = partial(_start, request=request)
        elif args.action == "end":
            work = partial(_end, nodes=list(args.nodes), by=_who(args.by), now=now)
        else:
            work = partial(_list, now=now)
    except RequestError as exc:
        print(f"maintenance {args.action}: {exc}", file=sys.stderr)
        return 2
    unusable = asyncio.run(probe(url))
    if unusable is not None:
        print(f"the store at ALERTROUTER_DATABASE_URL={masked(url)} cannot be used: {unusable}", file=sys.stderr)
        return 2
    return asyncio.run(_with_db(url, work))


async def _with_db(url: str, work: Callable[[Database], Awaitable[int]]) -> int:
    db = Database(url)
    try:
        return await work(db)
    finally:
        await db.dispose()


async def _start(db: Database, *, request: StartRequest) -> int:
    rows = await service.start(db, request)
    print(f"in maintenance until {_when(request.ends_at)}: {', '.join(r.node for r in rows)}")
    return 0


async def _end(db: Database, *, nodes: Sequence[str], by: str, now: datetime) -> int:
    try:
        ended = await service.end(db, nodes, by=by, now=now)
    except RequestError as exc:
        print(f"maintenance end: {exc}", file=sys.stderr)
        return 2
    missing = [n for n in dict.fromkeys(n.strip() for n in nodes) if n and n not in ended]
    if ended:
        print(f"maintenance ended: {', '.join(ended)}")
    if missing:
        print(f"not in maintenance: {', '.join(missing)}", file=sys.stderr)
    return 1 if missing else 0


async def _list(db: Database, *, now: datetime) -> int:
    write_table(sys.stdout, await service.listed(db, now=now), now)
    return 0


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M UTC")


def write_table(out: TextIO, rows: Sequence[MaintenanceRow], now: datetime) -> None:
    """One line per window: node, state, since, until, who, reason."""
    if not rows:
        out.write("no node is in maintenance\n")
        return
    lines = [("NODE", "STATE", "SINCE", "UNTIL", "BY", "REASON")]
    for row in rows:
        state = "ended" if row.ends_at <= now else ("pending" if row.starts_at > now else "active")
        lines.append((row.node, state, _when(row.starts_at), _when(row.ends_at), row.created_by, row.reason))
    widths = [max(len(line[i]) for line in lines) for i in range(5)]
    for line in lines:
        out.write("  ".join(v.ljust(w) for v, w in zip(line[:5], widths, strict=True)) + "  " + line[5] + "\n")
