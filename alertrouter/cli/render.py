"""`alertrouter render TEMPLATE`: a message template previewed with a built-in sample notification."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from alertrouter.message.i18n import DEFAULT_LANGUAGE, DEFAULT_TIMEZONE, LANGUAGES
from alertrouter.render.samples import render_sample
from alertrouter.render.templates import Templates
from alertrouter.ruleset import ConfigError, load_ruleset
from alertrouter.settings import get_settings

__all__ = ["add_render_parser", "cmd_render"]


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


def add_render_parser(sub: Any) -> None:
    """Adds `render` to the `alertrouter` subcommands."""
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
