"""`POST /webhook/alertmanager` and `POST /api/v2/alerts`: answer 2xx only once the batch is committed."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from alertrouter.ingest.batch import IngestBatch, IngestResult, body_digest
from alertrouter.ingest.body import BodyTooLarge, read_body
from alertrouter.ingest.payloads import Parsed, PayloadError, parse_api_v2, parse_webhook
from alertrouter.liveness.watch import Heard
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.runtime import Runtime, RuntimeDep
from alertrouter.store import describe_error, is_outage

__all__ = ["router"]

log = logging.getLogger(__name__)
router = APIRouter(tags=["ingest"])

RETRY_AFTER_SECONDS = "5"


@router.post("/webhook/alertmanager", summary="Alertmanager webhook receiver (version 4)")
async def alertmanager_webhook(request: Request, runtime: RuntimeDep) -> JSONResponse:
    return await _ingest(request, runtime, "webhook", parse_webhook)


@router.post("/api/v2/alerts", summary="Alertmanager API v2: Prometheus can push here directly")
async def api_v2_alerts(request: Request, runtime: RuntimeDep) -> JSONResponse:
    return await _ingest(request, runtime, "api_v2", lambda body, _: parse_api_v2(body, now=utcnow()))


def unauthorized(runtime: Runtime) -> JSONResponse:
    return JSONResponse(
        {"error": "missing or wrong credentials"},
        status_code=401,
        headers={"WWW-Authenticate": runtime.auth.challenge},
    )


@dataclass(slots=True)
class _Answer:
    """One request's answer: counted by its result, its latency observed, then the response."""

    metrics: Metrics
    endpoint: str
    started: float

    def __call__(self, result: str, status: int, content: dict[str, object], **headers: str) -> JSONResponse:
        self.metrics.webhooks.labels(endpoint=self.endpoint, result=result).inc()
        self.metrics.ingest_latency.labels(endpoint=self.endpoint).observe(time.perf_counter() - self.started)
        return JSONResponse(content, status_code=status, headers=headers or None)


async def _ingest(
    request: Request, runtime: Runtime, endpoint: str, parse: Callable[[bytes, bytes | None], Parsed]
) -> JSONResponse:
    """`parse` gets the body and, for a webhook, its `body_digest` (hashed once for both uses)."""
    m = runtime.metrics
    answer = _Answer(m, endpoint, time.perf_counter())
    if not runtime.auth.check(request.headers.get("authorization")):
        m.webhooks.labels(endpoint=endpoint, result="unauthorized").inc()
        return unauthorized(runtime)
    try:
        body = await read_body(request, runtime.settings.max_body_bytes)
    except BodyTooLarge as exc:
        return answer("too_large", 413, {"error": str(exc)})
    key = body_digest(body) if endpoint == "webhook" else None
    if key is not None and (repeated := runtime.ingestor.repeat_body(body, key)) is not None:
        m.alerts_received.labels(endpoint=endpoint).inc(repeated)
        return answer("repeat", 200, {"status": "ok", "alerts": repeated})
    try:
        parsed = parse(body, key)
    except PayloadError as exc:
        log.warning("rejected %s payload: %s", endpoint, exc)
        return answer("rejected", 400, {"error": "invalid payload", "problems": exc.problems})

    batch, heard = _heartbeats_apart(runtime, parsed.batch)
    try:
        result = await _store(runtime, batch, heard)
    except Exception as exc:
        return _unstored(answer, exc, batch)
    return _stored(answer, parsed, batch, heard, result)


def _heartbeats_apart(runtime: Runtime, batch: IngestBatch) -> tuple[IngestBatch, Heard | None]:
    """The batch without its heartbeats' alerts, and what they say (None: no heartbeat monitor)."""
    heard = runtime.heartbeats.heard(batch.alerts) if runtime.heartbeats is not None else None
    if heard is not None and heard.beats:
        # A Watchdog says its source is alive; it is no incident (stored as one, it would fire for ever
        # and take a route). Such a payload is never answered from `Ingestor.repeat_body`: its re-sends
        # must refresh the heartbeat, hence no `body_digest`.
        batch = replace(batch, alerts=heard.others, body_digest=None)
    return batch, heard


async def _store(runtime: Runtime, batch: IngestBatch, heard: Heard | None) -> IngestResult:
    """The heartbeats heard and the batch committed, within the store's timeout (raises on failure)."""
    async with asyncio.timeout(runtime.settings.store_timeout.total_seconds()):
        if heard is not None and heard.names and runtime.heartbeats is not None:
            await runtime.heartbeats.seen(heard.names, via="alert")
        return await runtime.ingestor.ingest(batch) if batch.alerts else IngestResult()


def _unstored(answer: _Answer, exc: Exception, batch: IngestBatch) -> JSONResponse:
    """A 503 (retry later) when the store is out, else a 500: this payload alone could not be stored."""
    answer.metrics.db_errors.labels(operation="ingest").inc()
    if not is_outage(exc):  # the writer logged why
        return answer("error", 500, {"error": "this payload could not be stored; the server logged why"})
    log.error(
        "could not store %s payload (%d alerts), answering 503: %s",
        answer.endpoint,
        len(batch.alerts),
        describe_error(exc),
    )
    return answer(
        "unavailable",
        503,
        {"error": "store unavailable, retry later"},
        **{"Retry-After": RETRY_AFTER_SECONDS},
    )


def _stored(
    answer: _Answer, parsed: Parsed, batch: IngestBatch, heard: Heard | None, result: IngestResult
) -> JSONResponse:
    """A committed batch counted, and answered: 200, or 400 naming the alerts that were left out."""
    m = answer.metrics
    m.alerts_received.labels(endpoint=answer.endpoint).inc(len(batch.alerts))
    for kind, count in result.transitions.items():
        m.transitions.labels(kind=kind.value).inc(count)
    if batch.truncated_alerts:
        m.truncated.inc(batch.truncated_alerts)
        log.warning(
            "Alertmanager cut %d alerts from group %s (max_alerts): they never reached alertrouter",
            batch.truncated_alerts,
            batch.group_key,
        )
    if parsed.problems:
        log.warning("stored %d alerts, rejected %d: %s", len(batch.alerts), batch.rejected_alerts, parsed.problems)
        return answer(
            "partial",
            400,
            {"error": "some alerts were invalid", "stored": len(batch.alerts), "problems": parsed.problems},
        )
    content: dict[str, object] = {"status": "ok", "alerts": len(batch.alerts)}
    if heard is not None and heard.beats:
        content["heartbeats"] = sorted(heard.names)
    return answer("repeat" if result.repeat else "stored", 200, content)
