"""`alertrouter gpus [--rma] [--csv]`: every GPU the store knows by its UUID, or only the RMA candidates,
as a table or as the CSV a vendor's RMA form asks for."""

from __future__ import annotations

import argparse
import asyncio
import csv
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from alertrouter.gpu.report import GpuReport, candidate_query, event_list, report
from alertrouter.gpu.rma import RmaRule
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.ruleset.rma import rma_rules
from alertrouter.settings import get_settings
from alertrouter.store import Database
from alertrouter.store import gpus as store
from alertrouter.store.db import probe
from alertrouter.store.urls import masked

__all__ = ["CSV_COLUMNS", "add_gpus_parser", "cmd_gpus", "write_csv"]

_DESCRIPTION = """\
Every GPU alertrouter has seen in a GPU alert with an Xid (or an alert the `rma:` rules name), by
its own identity: dcgm-exporter's UUID, so its history survives node renames and moves. Read from
the store of ALERTROUTER_DATABASE_URL (the same settings as `serve`); the RMA verdicts from the
`rma:` rules of ALERTROUTER_CONFIG (rules/rma.yml; the shipped defaults without one).

  alertrouter gpus                 a table: UUID, node, GPU index, model, events, RMA verdict
  alertrouter gpus --rma           only the RMA candidates
  alertrouter gpus --rma --csv     the CSV an RMA form asks for, one GPU per line:
      uuid, serial, model, node, slot, pci_bus_id, event_count, events (xid@time;... in UTC,
      the alertname for an event without an Xid), rma_rule, reason

An alert without a UUID label records nothing (no history key); a serial shows only where
dcgm-exporter exports it.
"""

CSV_COLUMNS = (
    "uuid",
    "serial",
    "model",
    "node",
    "slot",
    "pci_bus_id",
    "event_count",
    "events",
    "rma_rule",
    "reason",
)
_PAGE = 500


def add_gpus_parser(sub: Any) -> None:
    """Adds `gpus` to the `alertrouter` subcommands."""
    p = sub.add_parser(
        "gpus",
        help="GPUs by UUID with their Xid history; --rma: the RMA candidates (--csv for the form)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--rma", action="store_true", help="only the GPUs the rma: rules make RMA candidates")
    p.add_argument("--csv", action="store_true", help="CSV (header line first) instead of a table")
    p.add_argument("--config", type=Path, help="rules directory or file (env ALERTROUTER_CONFIG)")
    p.add_argument("--database-url", help="sqlite:///path.db or postgresql://... (env ALERTROUTER_DATABASE_URL)")
    p.set_defaults(func=cmd_gpus)


def cmd_gpus(args: argparse.Namespace) -> int:
    overrides = {k: v for k, v in {"config": args.config, "database_url": args.database_url}.items() if v is not None}
    try:
        settings = get_settings(**overrides)
    except ValidationError as exc:
        for err in exc.errors(include_url=False):
            name = "ALERTROUTER_" + "_".join(str(p) for p in err["loc"]).upper()
            print(f"settings: {name}: {err['msg']}", file=sys.stderr)
        return 2
    try:
        rules = rma_rules(load_ruleset(settings.config).rma)
    except ConfigError as exc:
        for config_problem in exc.problems:
            print(config_problem, file=sys.stderr)
        return 2
    unusable = asyncio.run(probe(settings.database_url))
    if unusable is not None:
        where = masked(settings.database_url)
        print(f"the store at ALERTROUTER_DATABASE_URL={where} cannot be used: {unusable}", file=sys.stderr)
        return 2
    reports = asyncio.run(_read(settings.database_url, rules, rma=args.rma))
    if args.csv:
        write_csv(sys.stdout, reports)
    else:
        _write_table(sys.stdout, reports)
    return 0


async def _read(url: str, rules: Sequence[RmaRule], *, rma: bool) -> list[GpuReport]:
    """Every GPU (or RMA candidate), page by page."""
    only = None
    if rma:
        query = candidate_query(rules)
        only = store.GpuFilter(xids=query.xids, alertnames=query.alertnames, keep=query.keep)
    db = Database(url)
    out: list[GpuReport] = []
    try:
        async with db.read() as session:
            while True:
                rows, events, total = await store.read_gpus(session, limit=_PAGE, offset=len(out), only=only)
                out += [report(row, events.get(row.uuid, []), rules) for row in rows]
                if not rows or len(out) >= total:
                    return out
    finally:
        await db.dispose()


def write_csv(out: TextIO, reports: Sequence[GpuReport]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in reports:
        writer.writerow(
            [
                r.uuid,
                r.serial or "",
                r.model or "",
                r.node or "",
                r.slot or "",
                r.pci_bus_id or "",
                len(r.events),
                event_list(r.events),
                r.verdict.rule or "",
                r.reason,
            ]
        )


def _write_table(out: TextIO, reports: Sequence[GpuReport]) -> None:
    if not reports:
        print("no GPUs", file=out)
        return
    for r in reports:
        verdict = f"RMA candidate: {r.reason}" if r.verdict.candidate else (r.reason or "-")
        where = f"{r.node or '?'} GPU {r.slot or '?'}"
        print(f"{r.uuid}  {where}  {r.model or '-'}  {len(r.events)} events  {verdict}", file=out)
