"""Console page: the loaded rules with every secret masked, their hash, the time intervals and whether each
is active now, and `simulate` on a pasted payload."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import yaml
from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from alertrouter.channels.registry import secret_values
from alertrouter.model import utcnow
from alertrouter.pipeline.route import Route
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.timeinterval import describe_spec
from alertrouter.replay.simulate import SimulationError, Step, simulate
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import compile_rules
from alertrouter.web.console.pages import ConsoleDep, PageError, check_csrf, read_form
from alertrouter.web.console.views import N_

__all__ = ["IntervalView", "interval_views", "masked_config", "router"]

router = APIRouter(include_in_schema=False)
MASK = "********"


def _mask(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, dict):
        return {k: _mask(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask(v, secrets) for v in value]
    if isinstance(value, str):
        for secret in secrets:  # a secret interpolated into another field (a URL, a header)
            value = value.replace(secret, MASK)
    return value


def masked_config(ruleset: Ruleset) -> str:
    """The configuration as YAML: SecretStr fields dump masked, and any secret's value found elsewhere
    is replaced too."""
    data = ruleset.model_dump(mode="json", by_alias=True, exclude={"sources", "config_hash", "origins"})
    secrets = sorted(secret_values(ruleset), key=len, reverse=True)
    return yaml.safe_dump(_mask(data, secrets), sort_keys=False, allow_unicode=True, width=100)


@dataclass(frozen=True, slots=True)
class IntervalView:
    name: str
    active: bool
    until: datetime | None  # when it next starts or ends
    specs: list[str]
    used_by: list[tuple[str, str]]  # (route path, "mutes" | "active"): the page words them


def _uses(route: Route) -> Iterator[tuple[str, tuple[str, str]]]:
    for name in route.mute_time_intervals:
        yield name, (route.path, "mutes")
    for name in route.active_time_intervals:
        yield name, (route.path, "active")
    for child in route.routes:
        yield from _uses(child)


def interval_views(pipeline: CompiledRules, now: datetime) -> list[IntervalView]:
    """Every named interval, whether it is active at `now` and until when, and the routes that use it."""
    uses: dict[str, list[tuple[str, str]]] = {}
    for name, use in _uses(pipeline.route):
        uses.setdefault(name, []).append(use)
    return [
        IntervalView(
            name=name,
            active=interval.active(now),
            until=interval.next_change(now),
            specs=[describe_spec(spec) for spec in interval.specs],  # none: never active
            used_by=uses.get(name, []),
        )
        for name, interval in sorted(pipeline.time_intervals.items())
    ]


def _page(console: ConsoleDep, *, status: int = 200, **context: Any) -> HTMLResponse:
    ruleset = console.runtime.ruleset
    context.setdefault("payload", "")
    context.setdefault("outcome", None)
    context.setdefault("error", "")
    context.setdefault("detail", "")  # the parser's own words, shown as machine text
    return console.page(
        "rules",
        status=status,
        title=N_("Rules"),
        config=masked_config(ruleset),
        config_hash=ruleset.config_hash,
        sources=ruleset.sources,
        intervals=interval_views(console.runtime.engine.pipeline, utcnow()),
        **context,
    )


@router.get("/rules")
async def rules_page(console: ConsoleDep) -> HTMLResponse:
    return _page(console)


@router.post("/rules/simulate")
async def run_simulation(console: ConsoleDep) -> HTMLResponse:
    """Read-only (a throwaway store), but a form: it needs a principal and the session's CSRF token."""
    form = await read_form(console.request, limit=console.runtime.settings.max_body_bytes + 4096)
    principal = console.principal
    if principal is not None and principal.via == "session" and not check_csrf(form, principal.csrf):
        raise PageError(403, N_("Form expired"), N_("The form's security token does not match your session."))
    payload = form.get("payload", "").strip()
    if not payload:
        error = console._("Paste an Alertmanager webhook body or a JSON list of alerts.")
        return _page(console, status=400, error=error)
    try:
        json.loads(payload)
    except json.JSONDecodeError as exc:
        error = console._("Invalid JSON (line %(line)s):", line=exc.lineno)
        return _page(console, status=400, payload=payload, error=error, detail=exc.msg)
    try:
        outcome = await simulate(compile_rules(console.runtime.ruleset), [Step("pasted payload", payload.encode())])
    except SimulationError as exc:
        error = console._("The payload could not be simulated:")
        return _page(console, status=400, payload=payload, error=error, detail=str(exc))
    return _page(console, payload=payload, outcome=outcome.as_json())
