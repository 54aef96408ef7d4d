"""The FastAPI application: its runtime built, started and stopped with it, its routers installed (`web.wiring`)."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import AsyncIterator

import httpx
from fastapi import FastAPI

from alertrouter import __version__
from alertrouter.auth.keys import Signers, load_signers
from alertrouter.auth.webhook import Authenticator
from alertrouter.channels.base import Channel
from alertrouter.channels.registry import build_channels, secret_values
from alertrouter.delivery.expand import ActionLinks
from alertrouter.delivery.worker import DeliveryWorker
from alertrouter.discovery.cordons import MaintenanceReads
from alertrouter.discovery.prometheus import PrometheusLookup
from alertrouter.engine.jobs import JobWatch
from alertrouter.engine.runner import EngineRunner
from alertrouter.gpu.rma import relevant
from alertrouter.ingest.activity import IngestActivity
from alertrouter.ingest.gpus import GpuRecorder
from alertrouter.ingest.maintenance import Maintenance
from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.monitor import HeartbeatMonitor
from alertrouter.maintenance.stuck import StuckWatch
from alertrouter.metrics import Metrics
from alertrouter.process.checkpoints import Checkpointer
from alertrouter.process.heap import settle_heap, time_collections
from alertrouter.process.logs import redact_secrets
from alertrouter.process.loops import LoopHealth
from alertrouter.process.scheduler import build_scheduler
from alertrouter.render.templates import Templates
from alertrouter.ruleset import Ruleset
from alertrouter.ruleset.build import compile_rules, unconfigured_channels
from alertrouter.ruleset.jobs import impact_rules, job_routes
from alertrouter.ruleset.maintenance import taint_rules
from alertrouter.ruleset.rma import rma_rules
from alertrouter.runtime import Runtime
from alertrouter.settings import Settings
from alertrouter.store import Database, describe_error
from alertrouter.store.migrate import head_revision, upgrade
from alertrouter.web import wiring
from alertrouter.web.console.pages import console_templates

__all__ = ["build_runtime", "create_app", "webhook_authenticator"]

log = logging.getLogger(__name__)


def webhook_authenticator(settings: Settings) -> Authenticator:
    """The check of the ingest endpoints' `Authorization` header, from the bearer token and Basic pair.
    Built here, not in `settings` (which holds values only); the console's `Access` shares this one."""
    bearer = settings.bearer_token.get_secret_value() if settings.bearer_token is not None else None
    basic = None
    if settings.basic_username is not None and settings.basic_password is not None:
        basic = (settings.basic_username, settings.basic_password.get_secret_value())
    return Authenticator(bearer=bearer, basic=basic)


async def build_runtime(settings: Settings, ruleset: Ruleset) -> Runtime:
    """Every long-lived part, each given what it needs when it is built (the signing key may live in
    the store, hence async). Nothing is started here."""
    db = Database(
        settings.database_url,
        sqlite_synchronous=settings.sqlite_synchronous,
        pool_size=settings.db_pool_size,
        busy_timeout=_busy_timeout(settings),
    )
    touches = TouchBuffer()
    activity = IngestActivity()
    metrics = Metrics()
    loops = LoopHealth(metrics)
    metrics.config_hash.labels(hash=ruleset.config_hash).set(1)
    maintenance = _maintenance(settings, db, touches, metrics, loops)
    secret_key = settings.secret_key.get_secret_value() if settings.secret_key is not None else None
    signers = await load_signers(db, secret_key)
    http = httpx.AsyncClient(timeout=httpx.Timeout(10.0), limits=httpx.Limits(max_connections=100))
    channels = build_channels(ruleset, client=http, renderer=Templates(settings.templates_dir))
    delivery = _delivery(settings, ruleset, db, channels, signers, metrics, loops)
    lookup = _lookup(ruleset, metrics, loops)
    engine = _engine(settings, ruleset, db, activity, delivery, lookup, metrics, loops)
    # a GPU's events are recorded as its alerts are committed: under the node names the engine uses
    recorder = GpuRecorder(engine.pipeline.nodes, relevant(rma_rules(ruleset.rma)))
    ingestor = Ingestor(db, touches, activity=activity, on_committed=engine.committed, gpus=recorder)
    monitor = HeartbeatMonitor(
        db, ruleset.heartbeats, ingestor.ingest, locale=ruleset.locale(""), metrics=metrics, loops=loops
    )
    stuck = StuckWatch(
        db,
        ingestor.ingest,
        stuck_after=ruleset.maintenance.stuck_after,
        discovered=lookup.snapshot if lookup is not None else None,
        loops=loops,
    )
    checkpoints = None
    if (sqlite_file := db.sqlite_file) is not None:
        checkpoints = Checkpointer(sqlite_file, busy_timeout=_busy_timeout(settings), metrics=metrics, loops=loops)
    return Runtime(
        settings=settings,
        ruleset=ruleset,
        db=db,
        ingestor=ingestor,
        maintenance=maintenance,
        engine=engine,
        metrics=metrics,
        auth=webhook_authenticator(settings),
        head_revision=head_revision(),
        channels=channels,
        delivery=delivery,
        http=http,
        loops=loops,
        signers=signers,
        scheduler=build_scheduler(settings, ruleset, db, engine.pipeline, metrics, loops),
        lookup=lookup,
        heartbeats=monitor,
        checkpoints=checkpoints,
        stuck=stuck,
    )


def _busy_timeout(settings: Settings) -> float:
    """How long SQLite waits for a lock: most of `store_timeout`, at least 0.1 s."""
    return max(0.1, settings.store_timeout.total_seconds() * 0.8)


def _maintenance(
    settings: Settings, db: Database, touches: TouchBuffer, metrics: Metrics, loops: LoopHealth
) -> Maintenance:
    """The loop that flushes ingest's `last_seen` touches and prunes the raw log past its retention."""
    return Maintenance(
        db,
        touches,
        interval=settings.touch_flush_interval,
        retention=settings.raw_event_retention,
        on_expired=metrics.expired.inc,
        loops=loops,
    )


def _delivery(
    settings: Settings,
    ruleset: Ruleset,
    db: Database,
    channels: dict[str, Channel],
    signers: Signers,
    metrics: Metrics,
    loops: LoopHealth,
) -> DeliveryWorker | None:
    """The outbox worker, unless this process does not deliver (`ALERTROUTER_DELIVER` off)."""
    if not settings.deliver:
        return None
    return DeliveryWorker(
        db,
        ruleset,
        channels,
        metrics=metrics,
        interval=settings.delivery_interval.total_seconds(),
        concurrency=settings.delivery_concurrency,
        actions=ActionLinks(signers.link, settings.link_ttl, settings.link_silence),
        loops=loops,
    )


def _lookup(ruleset: Ruleset, metrics: Metrics, loops: LoopHealth) -> PrometheusLookup | None:
    """The node lookup, when the rules name a Prometheus (`topology.prometheus`); it reads the pods' series too
    when the `jobs:` rules are on."""
    if ruleset.topology.prometheus is None:
        return None
    section = ruleset.maintenance
    return PrometheusLookup(
        ruleset.topology.prometheus,
        keep_for=ruleset.topology.lookup_keep_for,
        metrics=metrics,
        loops=loops,
        maintenance=MaintenanceReads(section.cordoned, taint_rules(section)),
        pod_labels=ruleset.jobs.pod_labels if ruleset.jobs is not None else None,  # the jobs' pods, when on
    )


def _job_watch(ruleset: Ruleset, lookup: PrometheusLookup | None) -> JobWatch | None:
    """The jobs hit by the live alerts, kept by the engine, when the `jobs:` rules are on."""
    if ruleset.jobs is None:
        return None
    return JobWatch(impact_rules(ruleset.jobs), lookup.pods if lookup is not None else None, job_routes(ruleset.jobs))


def _engine(
    settings: Settings,
    ruleset: Ruleset,
    db: Database,
    activity: IngestActivity,
    delivery: DeliveryWorker | None,
    lookup: PrometheusLookup | None,
    metrics: Metrics,
    loops: LoopHealth,
) -> EngineRunner:
    """The engine, wired to what it nudges (delivery, once it has intents) and what nudges it (a new
    node map from the lookup)."""
    engine = EngineRunner(
        db,
        compile_rules(ruleset),
        metrics,
        interval=settings.engine_interval,
        min_gap=settings.engine_min_gap,
        on_intents=delivery.nudge if delivery is not None else None,
        ingest_quiet=activity.quiet_for,
        loops=loops,
        discovered=lookup.snapshot if lookup is not None else None,
        freeze_after_full=True,
        rma=rma_rules(ruleset.rma),
        jobs=_job_watch(ruleset, lookup),
    )
    if lookup is not None:
        lookup.on_change = engine.nudge  # a new map: a pass re-keys the alerts it names
    return engine


WARM_QUIET = 1.0  # seconds without a stored payload before the console is warmed a page further


async def _warm_console(app: FastAPI, runtime: Runtime) -> None:
    """What the console's first views after a start would pay, paid as `serve` starts, while it has
    nothing else to do: its pages compiled one at a time (in a worker thread) once ingest has been quiet
    for `WARM_QUIET` and no engine pass runs, then the incident list's filter menus read. Compiling them
    all at once held the first alert's pass after a start back (bench_delivery measures it). A failure only
    means the first view pays it."""
    started = time.perf_counter()

    async def idle() -> None:
        while True:
            wait = WARM_QUIET - runtime.ingestor.quiet_for()
            if wait <= 0 and not runtime.engine.passing:
                return
            await asyncio.sleep(max(wait, 0.1))  # quiet is a time since the last payload: no event says it

    try:
        templates = console_templates(app, runtime)
        for env, name in templates:
            await idle()
            await asyncio.to_thread(env.get_template, name)
        await idle()
        await runtime.filter_choices.read(runtime.db)
    except Exception as exc:
        log.warning("console not warmed as it started (its first views will be slower): %s", describe_error(exc))
        return
    log.info(
        "console warmed: %d page templates compiled, filter menus read, %.2f s after the start",
        len(templates),
        time.perf_counter() - started,
    )


def create_app(settings: Settings, ruleset: Ruleset, *, server: bool = False) -> FastAPI:
    """An app whose lifespan migrates (if enabled), starts maintenance, and flushes on shutdown.
    `server`: this process is `alertrouter serve` (it tunes the process-wide garbage collector once
    started; an app built inside tests or another program leaves it alone)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if settings.auto_migrate:
            await asyncio.to_thread(upgrade, settings.database_url)
        redact_secrets(secret_values(ruleset))
        runtime = await build_runtime(settings, ruleset)
        app.state.runtime = runtime
        await _start(runtime)
        _log_ready(runtime)
        serving = _serving(app, runtime) if server else contextlib.nullcontext()
        try:
            async with serving:
                yield
        finally:
            await _stop(runtime)

    app = FastAPI(
        title="alertrouter",
        version=__version__,
        summary="Cuts Alertmanager noise for GPU clusters before anyone is paged.",
        lifespan=lifespan,
        docs_url=None,  # install_api_docs: /docs and /redoc with packaged assets, no CDN
        redoc_url=None,
    )
    wiring.install(app)
    return app


async def _start(runtime: Runtime) -> None:
    """Every loop started, the engine's once the node lookup has had its first answer (or its timeout)."""
    runtime.maintenance.start()
    if runtime.checkpoints is not None:
        runtime.checkpoints.start()
    if runtime.lookup is not None:
        runtime.lookup.start()
        # The first pass then names nodes as Prometheus does, instead of by address and moving them
        # a moment later; a Prometheus that does not answer in time delays nothing further.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(runtime.lookup.answered.wait(), runtime.lookup.config.timeout.total_seconds())
    runtime.engine.start()
    if runtime.heartbeats is not None:
        runtime.heartbeats.start()
    if runtime.stuck is not None:
        runtime.stuck.start()
    if runtime.delivery is not None:
        runtime.delivery.start()
    if runtime.scheduler is not None:
        runtime.scheduler.start()


def _log_ready(runtime: Runtime) -> None:
    """The channels that cannot send named, then the one line that says the process serves."""
    ruleset = runtime.ruleset
    for name, missing in unconfigured_channels(ruleset).items():
        log.warning("channel %s has no %s: its messages are recorded, not sent", name, " or ".join(missing))
    log.info(
        "alertrouter %s ready: store %s, rules %s (hash %s)",
        __version__,
        runtime.db.dialect,
        ", ".join(ruleset.sources) or "defaults",
        ruleset.config_hash,
    )


@contextlib.asynccontextmanager
async def _serving(app: FastAPI, runtime: Runtime) -> AsyncIterator[None]:
    """`serve`'s own process while it runs: the console warmed in the background, the heap settled and
    the collector's pauses timed; on the way out, before the runtime stops, the warming cancelled."""
    warming = asyncio.create_task(_warm_console(app, runtime), name="alertrouter-console-warm")
    settle_heap()
    pause = runtime.metrics.gc_pause
    timer = time_collections([pause.labels(generation=str(g)).observe for g in range(3)])
    try:
        yield
    finally:
        gc.callbacks.remove(timer)
        if not warming.done():
            warming.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await warming


async def _stop(runtime: Runtime) -> None:
    """Every loop stopped, about the reverse of `_start`, then the channels, the HTTP client and the store."""
    await runtime.filter_choices.stop()
    if runtime.scheduler is not None:
        await runtime.scheduler.stop()
    if runtime.heartbeats is not None:
        await runtime.heartbeats.stop()
    if runtime.stuck is not None:
        await runtime.stuck.stop()
    await runtime.engine.stop()
    if runtime.lookup is not None:
        await runtime.lookup.stop()
    if runtime.delivery is not None:
        await runtime.delivery.stop()
    await runtime.maintenance.stop()
    if runtime.checkpoints is not None:
        await runtime.checkpoints.stop()
    for channel in runtime.channels.values():
        await channel.aclose()
    await runtime.http.aclose()
    await runtime.db.dispose()
