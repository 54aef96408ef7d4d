"""The rules as a one-shot subcommand reads them: problems printed, compiled for the pipeline; `--at` times."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

from alertrouter.model import parse_time
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.ruleset import ConfigError, Ruleset, load_ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.settings import get_settings

__all__ = ["at_time", "load_pipeline", "load_rules"]


def load_rules(path: Path) -> Ruleset | None:
    try:
        return load_ruleset(path)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        print(f"{len(exc.problems)} problem(s) in {path}", file=sys.stderr)
        return None


def load_pipeline(path: Path | None) -> CompiledRules | None:
    ruleset = load_rules(path or get_settings().config)
    return None if ruleset is None else compile_rules(ruleset)


def at_time(value: str) -> datetime:
    if (t := parse_time(value)) is None:
        raise argparse.ArgumentTypeError(f"not an RFC 3339 time: {value!r}")
    return t
