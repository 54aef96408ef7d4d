"""`/a/{token}`: the acknowledge and silence links in messages, usable from a phone without a login.

GET only shows what the link will do (chat apps fetch links to preview them); the confirmation POST
acts. Forged or malformed: 403; expired: 410; used before: 409, and nothing changes.
"""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

from alertrouter.auth.links import Action, ActionToken, read_action
from alertrouter.auth.signing import TokenError
from alertrouter.store import console as store
from alertrouter.store import queries
from alertrouter.web import operations
from alertrouter.web.console import views
from alertrouter.web.console.pages import Console, OptionalConsoleDep, PageError
from alertrouter.web.console.views import N_

__all__ = ["router"]

router = APIRouter(include_in_schema=False)
_MAX_TOKEN = 2048


def _verify(console: Console, token: str) -> ActionToken:
    signers = console.runtime.signers
    if len(token) > _MAX_TOKEN:
        raise PageError(403, N_("Invalid link"), N_("This link is not valid."))
    try:
        return read_action(signers.link, token, now=console.now)
    except TokenError as exc:
        if exc.reason == "link expired":
            raise PageError(
                410, N_("Link expired"), N_("This link has expired. Open the incident in the console instead.")
            ) from None
        raise PageError(
            403, N_("Invalid link"), N_("This link is not valid: it was altered or not made by this server.")
        ) from None


def _describe(console: Console, action: ActionToken) -> str:
    if action.action is Action.ACK:
        return console._("Acknowledge this incident: its repeat messages stop; the resolved message still goes.")
    span = views.duration_text(console.runtime.settings.link_silence, console.tr)
    return console._("Silence this incident's alerts for %(span)s (matching its labels, any severity).", span=span)


@router.get("/a/{token}")
async def confirm_page(token: str, console: OptionalConsoleDep) -> HTMLResponse:
    action = _verify(console, token)
    async with console.runtime.db.read() as session:
        incident = await queries.get_incident(session, incident_id=action.incident_id)
        used = await store.used_token(session, nonce=action.nonce)
    if incident is None:
        return console.message(404, N_("Not found"), N_("There is no incident %(id)s."), id=action.incident_id)
    if used is not None:
        return console.message(
            409, N_("Link already used"), N_("This link was already used at %(at)s."), at=console.when(used.used_at)
        )
    return console.page(
        "link",
        title=N_("Acknowledge") if action.action is Action.ACK else N_("Silence"),
        action=action.action.value,
        description=_describe(console, action),
        incident=incident,
        state=views.incident_state(incident),
        expires_at=action.expires_at,
        matchers=operations.incident_matchers(
            incident.labels, severity_label=console.runtime.ruleset.global_.severity_label
        ),
        done=None,
    )


@router.post("/a/{token}")
async def act(token: str, console: OptionalConsoleDep) -> HTMLResponse:
    action = _verify(console, token)
    result = await operations.use_link(console.runtime, action)
    if result.outcome is operations.LinkOutcome.NO_INCIDENT:
        return console.message(404, N_("Not found"), N_("There is no incident %(id)s."), id=action.incident_id)
    if result.outcome is operations.LinkOutcome.REPLAYED:
        at = console.when(result.used_at) if result.used_at else console._("an earlier time")
        return console.message(
            409, N_("Link already used"), N_("This link was already used at %(at)s. Nothing was changed."), at=at
        )
    if result.outcome is operations.LinkOutcome.NOTHING_TO_SILENCE:
        return console.message(400, N_("Cannot silence"), N_("This incident has no labels to silence it by."))
    assert result.incident is not None
    return console.page(
        "link",
        title=N_("Done"),
        action=action.action.value,
        description=_describe(console, action),
        incident=result.incident,
        state=views.incident_state(result.incident),
        expires_at=action.expires_at,
        matchers=list(result.silence.matchers) if result.silence else [],
        done=result,
    )
