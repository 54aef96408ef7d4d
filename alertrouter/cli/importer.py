"""`alertrouter import alertmanager FILE --out DIR`: an Alertmanager config as a rules directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from alertrouter.importer import OutputError, SourceError, import_file, write_rules

__all__ = ["add_import_parser", "cmd_import_alertmanager"]

_HEADER = "# Imported from {source} by `alertrouter import alertmanager`; its report says what changed.\n"


def cmd_import_alertmanager(args: argparse.Namespace) -> int:
    """Exit 2, nothing written, for input that is not an Alertmanager config or an unusable --out."""
    try:
        imported = import_file(args.file)
        write_rules(imported.files, args.out, _HEADER.format(source=args.file.name))
    except SourceError as exc:
        print(f"import: {exc}; nothing written", file=sys.stderr)
        return 2
    except OutputError as exc:
        print(f"import: {exc}", file=sys.stderr)
        return 2
    print(imported.report.text(str(args.file), str(args.out)))
    print(f"check with: alertrouter check-config {args.out}")
    return 0


def add_import_parser(sub: Any) -> None:
    """Adds `import` to the `alertrouter` subcommands."""
    imp = sub.add_parser("import", help="make a rules directory from another tool's configuration")
    imp_sub = imp.add_subparsers(dest="import_command", required=True, metavar="SOURCE")
    am = imp_sub.add_parser(
        "alertmanager",
        help="import an alertmanager.yml: routes, receivers, inhibit rules, time intervals",
        description="Write a rules directory that routes every alert as the given Alertmanager config does, "
        "and print what was mapped, what changed and what could not be. Secrets become ${ENV} references "
        "(their names printed, their values never written). Exit 2, writing nothing, when the file is not an "
        "Alertmanager config (the line and the problem are named) or DIR exists and is not empty.",
    )
    am.add_argument("file", type=Path, metavar="ALERTMANAGER_YML")
    am.add_argument("--out", type=Path, required=True, metavar="DIR", help="the rules directory to create")
    am.set_defaults(func=cmd_import_alertmanager)
