"""The `alertrouter` command: its parser, and serve, check-config and db (every other subcommand has its module)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import uvicorn
from pydantic import ValidationError

from alertrouter import __version__
from alertrouter.app import create_app
from alertrouter.cli.digest import add_digest_parser
from alertrouter.cli.gpus import add_gpus_parser
from alertrouter.cli.importer import add_import_parser
from alertrouter.cli.maintenance import add_maintenance_parser
from alertrouter.cli.oncall import add_oncall_parser
from alertrouter.cli.passwords import add_hash_password_parser
from alertrouter.cli.render import add_render_parser
from alertrouter.cli.routes import add_routes_parser
from alertrouter.cli.rules import load_rules
from alertrouter.cli.sendtest import add_send_test_parser
from alertrouter.cli.simulate import add_simulate_parser
from alertrouter.process.logs import configure_logging
from alertrouter.ruleset import matcher_notes
from alertrouter.ruleset.build import unconfigured_channels
from alertrouter.settings import ListenRefused, Settings, get_settings
from alertrouter.store.db import probe
from alertrouter.store.migrate import head_revision, upgrade
from alertrouter.store.urls import masked

__all__ = ["main"]

log = logging.getLogger("alertrouter")

_DESCRIPTION = """\
alertrouter sits between Prometheus Alertmanager and the people on call. It stores every
alert durably (SQLite by default, PostgreSQL in production), and cuts the noise before
anyone is paged.

Process settings come from ALERTROUTER_* environment variables (docs/en/configuration.md), e.g.
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


def cmd_check_config(args: argparse.Namespace) -> int:
    path = args.path or get_settings().config
    ruleset = load_rules(path)
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


def cmd_serve(args: argparse.Namespace) -> int:
    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    try:
        host, warning = settings.listen_host()
    except ListenRefused as exc:  # before the rules and the store: nothing else is worth reading first
        log.error("refusing to start: %s", exc)
        return 2
    ruleset = load_rules(settings.config)
    if ruleset is None:
        log.error("refusing to start: the rules in %s are invalid (see above)", settings.config)
        return 1
    if not store_answers(settings):
        return 1
    for note in matcher_notes(settings.config):  # Alertmanager logs these on load too
        log.warning("matcher %s", note)
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
        "(ALERTROUTER_BEARER_TOKEN or ALERTROUTER_BASIC_USERNAME/PASSWORD) it listens on loopback only, "
        "and refuses to start (exit 2) if --host or ALERTROUTER_HOST asks for another address.",
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

    add_simulate_parser(sub)
    add_routes_parser(sub)
    add_render_parser(sub)
    add_send_test_parser(sub)
    add_digest_parser(sub)
    add_oncall_parser(sub)
    add_gpus_parser(sub)
    add_maintenance_parser(sub)
    add_hash_password_parser(sub)
    add_import_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
