"""`import alertmanager`: an alertmanager.yml in, the rules files that route every alert the same way out."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alertrouter.importer.receivers import convert_receivers
from alertrouter.importer.report import Report
from alertrouter.importer.routes import aggregation, convert_route
from alertrouter.importer.sections import convert_inhibit_rules, convert_time_intervals
from alertrouter.importer.source import SourceError, SourceFile, read_source

__all__ = ["Imported", "convert", "import_file"]

_SECTIONS = {"global", "route", "receivers", "inhibit_rules", "time_intervals", "mute_time_intervals", "templates"}
_IGNORED = {"tracing"}  # Alertmanager's own tracing: nothing to do with routing
_NODE_LABEL = "node"


@dataclass
class Imported:
    """Rules file name -> its sections, and the report to print."""

    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    report: Report = field(default_factory=Report)


def _check_top(src: SourceFile) -> dict[str, Any]:
    data = src.data
    if not isinstance(data, dict):
        kind = "empty" if data is None else f"a {type(data).__name__}"
        raise src.error((), f"not an Alertmanager config: the file is {kind}, not a mapping with route and receivers")
    for key in data:
        if key not in _SECTIONS | _IGNORED:
            raise src.error((key,), f"not an Alertmanager config: unknown top-level key {key!r}")
    if "route" not in data:
        raise src.error((), "not an Alertmanager config: no route")
    if data.get("global") is not None and not isinstance(data["global"], dict):
        raise src.error(("global",), "must be a mapping")
    return data


def _node_label(used: set[str], report: Report) -> dict[str, Any]:
    """alertrouter writes its derived node key under `global.node_label` before routing; a config that
    matches on a label of that name gets the key under another name, so its own label is left as it is."""
    if _NODE_LABEL not in used:
        return {}
    name, n = "alertrouter_node", 2
    while name in used:
        name, n = f"alertrouter_node_{n}", n + 1
    report.mapped.append(f"the config's own `node` label is matched as sent: alertrouter's node key goes to {name}")
    return {"global": {"node_label": name}}


def _notes(data: dict[str, Any], report: Report, channels: int) -> None:
    if data.get("templates") or channels:
        report.changed.append(
            "message text: alertrouter writes its own messages; Alertmanager's templates and the integrations' "
            "title/text/html/headers are not used"
        )
    timeout = (data.get("global") or {}).get("resolve_timeout")
    if timeout is not None and timeout != "5m":
        report.unmapped.append(
            f"global.resolve_timeout {timeout}: alertrouter resolves alerts posted without endsAt after 5m"
        )


def convert(src: SourceFile) -> Imported:
    """The rules files for `src`; raises `SourceError` (with its line) for what is not an Alertmanager config."""
    data = _check_top(src)
    result = Imported()
    report = result.report
    intervals = convert_time_intervals(src, data, report)
    receivers = convert_receivers(src, report)
    tree = convert_route(
        src,
        data["route"],
        receivers=[r["name"] for r in receivers.receivers],
        intervals={i["name"] for items in intervals.values() for i in items},
        send_resolved=receivers.send_resolved,
    )
    report.mapped.insert(
        0,
        f"route tree: {tree.routes} route(s), matchers as written (match, match_re, matchers), continue, "
        "group_wait/group_interval/repeat_interval (Alertmanager's defaults stated on the root), time intervals",
    )
    used = set(tree.labels) | {label for group_by in tree.group_bys.values() for label in group_by}
    inhibit = convert_inhibit_rules(src, data.get("inhibit_rules"), report, used)
    if node_label := _node_label(used, report):
        result.files["alertrouter.yml"] = node_label
    result.files["routes.yml"] = {"route": tree.route, "receivers": receivers.receivers, **intervals}
    result.files["aggregation.yml"] = {"aggregation": aggregation(tree, report)}
    if receivers.channels.items:
        result.files["channels.yml"] = {"channels": receivers.channels.items}
    if inhibit:
        result.files["inhibit.yml"] = {"inhibit_rules": inhibit}
    _notes(data, report, len(receivers.channels.items))
    return result


def import_file(path: Path) -> Imported:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SourceError(str(path), 0, "", f"cannot read: {exc}") from None
    return convert(read_source(str(path), text))
