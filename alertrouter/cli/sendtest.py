"""`alertrouter send-test RECEIVER`: one test message through each of a receiver's channels, now."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

from alertrouter.cli.rules import load_rules
from alertrouter.delivery.sendtest import send_test
from alertrouter.process.logs import configure_logging
from alertrouter.render.templates import Templates
from alertrouter.settings import get_settings

__all__ = ["add_send_test_parser", "cmd_send_test"]


def cmd_send_test(args: argparse.Namespace) -> int:
    settings = get_settings()
    configure_logging(settings.log_level, settings.log_format)
    ruleset = load_rules(args.config or settings.config)
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


def add_send_test_parser(sub: Any) -> None:
    """Adds `send-test` to the `alertrouter` subcommands."""
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
