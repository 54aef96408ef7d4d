"""Alertmanager's matchers in an imported config, checked as alertrouter reads them and kept as written."""

from __future__ import annotations

from typing import Any

from alertrouter.importer.source import Loc, SourceFile
from alertrouter.labels import MatcherError, matchers_from_legacy, parse_matchers
from alertrouter.ruleset.base import scalar_text

__all__ = ["legacy_map", "matcher_list", "string_list"]


def string_list(src: SourceFile, loc: Loc, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise src.error(loc, "must be a list of strings")
    return list(value)


def matcher_list(src: SourceFile, loc: Loc, value: Any, labels: set[str]) -> list[str]:
    """The `matchers:` strings as written (each may hold several, in either of Alertmanager's grammars);
    the label names they test are added to `labels`."""
    if isinstance(value, str):  # Alertmanager reads one string as a list of one
        value = [value]
    texts = string_list(src, loc, value)
    for i, text in enumerate(texts):
        try:
            labels.update(m.name for m in parse_matchers(text))
        except MatcherError as exc:
            raise src.error((*loc, i), str(exc)) from None
    return texts


def legacy_map(src: SourceFile, loc: Loc, value: Any, labels: set[str], *, regex: bool) -> dict[str, str]:
    """A `match` / `match_re` map, its values read as Alertmanager's decoder reads them (`1` is "1")."""
    if not isinstance(value, dict):
        raise src.error(loc, "must be a mapping of label names to values")
    out = {name: scalar_text(v) for name, v in value.items()}
    for name, v in out.items():
        if not isinstance(v, str):
            raise src.error((*loc, name), "must be a single value")
    try:
        matchers_from_legacy(None, out) if regex else matchers_from_legacy(out, None)
    except MatcherError as exc:
        raise src.error(loc, str(exc)) from None
    labels.update(out)
    return out
