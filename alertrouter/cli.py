"""The `alertrouter` command: serve, check-config, db."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from alertrouter import __version__
from alertrouter.logs import configure_logging
from alertrouter.ruleset import ConfigError, Ruleset, load_ruleset
from alertrouter.settings import Settings, get_settings

__all__ = ["main"]

log = logging.getLogger("alertrouter")

_DESCRIPTION = """\
alertrouter sits between Prometheus Alertmanager and the people on call. It stores every
alert durably (SQLite by default, PostgreSQL in production), and cuts the noise before
anyone is paged.

Process settings come from ALERTROUTER_* environment variables (see README), e.g.
  ALERTROUTER_DATABASE_URL   sqlite+aiosqlite:///alertrouter.db | postgresql+asyncpg://...
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
            print(f"settings: {name}: {err['msg']}", file=sys.stderr)
        raise SystemExit(2) from None


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
    print(f"ok: {len(ruleset.sources)} file(s) in {path}, config hash {ruleset.config_hash}")
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from alertrouter.app import create_app

    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    ruleset = _load_rules(settings.config)
    if ruleset is None:
        log.error("refusing to start: the rules in %s are invalid (see above)", settings.config)
        return 1
    host, warning = settings.listen_host()
    if warning:
        log.warning("%s", warning)
    log.info("listening on %s:%d, store %s", host, settings.port, settings.database_url.split("://")[0])
    uvicorn.run(
        create_app(settings, ruleset),
        host=host,
        port=settings.port,
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=10,
    )
    return 0


def cmd_db(args: argparse.Namespace) -> int:
    from alertrouter.store.migrate import head_revision, upgrade

    settings = _settings(args)
    configure_logging(settings.log_level, settings.log_format)
    if args.db_command == "upgrade":
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
        "(ALERTROUTER_BEARER_TOKEN or ALERTROUTER_BASIC_USERNAME/PASSWORD) it listens on loopback only.",
    )
    serve.add_argument("--config", type=Path, help="rules directory or file (env ALERTROUTER_CONFIG)")
    serve.add_argument("--host", help="listen address (env ALERTROUTER_HOST)")
    serve.add_argument("--port", type=int, help="listen port (env ALERTROUTER_PORT, default 9095)")
    serve.add_argument("--database-url", help="SQLAlchemy async URL (env ALERTROUTER_DATABASE_URL)")
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
    up.add_argument("--database-url", help="SQLAlchemy async URL (env ALERTROUTER_DATABASE_URL)")
    db.set_defaults(func=cmd_db)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
