"""The Prometheus node lookup (`topology.prometheus`): a supervised loop on every replica that reads
the configured series with `GET /api/v1/query` every `refresh`, keeps what they say in a `Book`, and
tells the engine when the resolved snapshot changes.

It runs on every replica, not only the engine's leader: the snapshot is in memory (nothing is
written to the store), so a replica that takes the lease already has it and re-keys nothing back to
addresses, and every replica's `GET /api/v1/nodes` shows it. A few instant queries per minute and
replica cost Prometheus nothing worth a lease.

Failures degrade, never fail a pass: the engine only reads the last snapshot. A series that cannot be
read (Prometheus down, slow, an error, an answer that is not a vector) keeps its claims for
`keep_for`; each distinct problem is logged once until the series reads again, and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpx
import orjson

from alertrouter import __version__
from alertrouter.discovery.book import Book, Resolved
from alertrouter.discovery.cordons import (
    CORDON_QUERY,
    CORDON_SERIES,
    TAINT_QUERY,
    TAINT_SERIES,
    MaintenanceReads,
    maintenance_of,
)
from alertrouter.discovery.parse import BadAnswer, claims_of, decode_vector, query_of, topology_of, vector
from alertrouter.discovery.pods import POD_SERIES, PodBook, pod_query
from alertrouter.jobs.pods import PodIndex
from alertrouter.metrics import Metrics
from alertrouter.model import utcnow
from alertrouter.pipeline.nodes import Discovered
from alertrouter.process.courtesy import Courtesy
from alertrouter.process.loops import LoopHealth
from alertrouter.ruleset.topology import PrometheusLookupConfig

__all__ = ["LOOP_NAME", "LookupProblem", "PrometheusLookup"]

log = logging.getLogger(__name__)

LOOP_NAME = "node_lookup"
_BODY_MAX = 64 * 1024 * 1024  # an answer larger than this is refused (kube_pod_info of ~200k pods fits)


@dataclass(frozen=True, slots=True)
class LookupProblem:
    series: str
    problem: str  # unreachable, timeout, http_status, query_error, bad_answer
    detail: str
    since: datetime


class _Failed(Exception):
    def __init__(self, problem: str, detail: str) -> None:
        super().__init__(detail)
        self.problem = problem
        self.detail = detail


class PrometheusLookup:
    def __init__(
        self,
        config: PrometheusLookupConfig,
        *,
        keep_for: timedelta,
        metrics: Metrics | None = None,
        loops: LoopHealth | None = None,
        client: httpx.AsyncClient | None = None,
        clock: Callable[[], datetime] = utcnow,
        on_change: Callable[[], None] | None = None,
        maintenance: MaintenanceReads | None = None,
        pod_labels: Sequence[str] | None = None,
    ) -> None:
        """`maintenance`: also read which nodes the cluster has cordoned or tainted (`discovery.cordons`)."""
        self.config = config
        self.maintenance = maintenance
        self.book = Book(keep_for)
        # The pods' series, read when the `jobs:` rules are on (`pod_labels`: the kube_pod_labels names)
        self.pod_labels = tuple(pod_labels) if pod_labels is not None else None
        self.pod_book = PodBook(keep_for)
        # The claims of a big cluster are hundreds of thousands of items of Python in a worker thread: it
        # pauses now and then (`alertrouter.process.courtesy`), or the event loop waits out CPython's switch
        # interval at every turn.
        self._courtesy = Courtesy()
        self._metrics = metrics
        self._loops = loops or LoopHealth(metrics)
        self._own_client = client is None
        headers = {"User-Agent": f"alertrouter/{__version__}", "Accept": "application/json"}
        if config.bearer_token is not None and config.bearer_token.get_secret_value():
            headers["Authorization"] = f"Bearer {config.bearer_token.get_secret_value()}"
        self._headers = headers
        self._client = client or httpx.AsyncClient(timeout=config.timeout.total_seconds())
        self._clock = clock
        self.on_change = on_change
        self.problems: dict[str, LookupProblem] = {}  # series -> its current problem
        self.last_success: dict[str, datetime] = {}
        self._conflicts_logged: set[tuple[str, str]] = set()
        self._logged: set[tuple[str, str]] = set()  # (problem, detail) warned about since all last read
        self._stopping = asyncio.Event()
        self.answered = asyncio.Event()  # set after the first refresh (whatever it found)
        self._task: asyncio.Task[None] | None = None
        if metrics is not None:
            for series in self._series():
                for problem in ("unreachable", "timeout", "http_status", "query_error", "bad_answer"):
                    metrics.node_lookup_errors.labels(series=series, problem=problem)

    @property
    def url(self) -> str:
        return self.config.url

    def snapshot(self) -> Discovered:
        """The resolved map; the same object until it changes (the engine compares by identity)."""
        return self.book.resolved.discovered

    @property
    def resolved(self) -> Resolved:
        return self.book.resolved

    def pods(self) -> PodIndex:
        """What the pods' series last said (`jobs.identity` reads it), with the problem reading them."""
        return self.pod_book.index

    def _series(self) -> tuple[str, ...]:
        """Every series read: the node lookup's, then the pods' (named `<series>/pods`: kube_pod_info is
        read twice, the second time with its namespace)."""
        pods = tuple(f"{s}/pods" for s in POD_SERIES) if self.pod_labels is not None else ()
        return (*self.config.series, *pods)

    async def refresh(self) -> bool:
        """Read every series once; True when the snapshot changed (`on_change` was called)."""
        failures: dict[tuple[str, str], list[str]] = {}
        for series in self.config.series:
            now = self._clock()
            try:
                labels = await self._query(query_of(series, self.config.node_labels))
            except _Failed as failed:
                self._failed(series, failed, now)
                failures.setdefault((failed.problem, failed.detail), []).append(series)
                continue
            # kube_pod_info is a series per pod (100,000 in a big cluster): read and kept off the event loop,
            # which keeps answering webhooks (taking them in was a long stretch of it)
            if series == "kube_node_labels":
                topology = await asyncio.to_thread(topology_of, labels, self.config.node_labels)
                await asyncio.to_thread(self.book.took_topology, topology, now)
            else:
                claims = await asyncio.to_thread(claims_of, series, labels, self._courtesy)
                await asyncio.to_thread(self.book.took, series, claims, now, self._courtesy)
            self._succeeded(series, now)
        if self.maintenance is not None:
            await self._read_maintenance(self.maintenance, failures)
        pods_before = self.pod_book.index
        if self.pod_labels is not None:
            await self._refresh_pods(self.pod_labels, failures)
        self._log_problems(failures)
        changed = await asyncio.to_thread(self.book.resolve, self._clock(), self._courtesy)
        self._observe()
        if changed:
            d = self.book.resolved.discovered
            log.info("node lookup: %d names and %d nodes' topology in force", len(d.names), len(d.topology))
        # the engine is told of new pods too: a job gone from them is no longer hit
        if (changed or self.pod_book.index is not pods_before) and self.on_change is not None:
            self.on_change()
        return changed

    async def _read_maintenance(self, reads: MaintenanceReads, failures: dict[tuple[str, str], list[str]]) -> None:
        """The cordons and taints, both read or neither taken: a failed read keeps what they last said
        (for `keep_for`), so a Prometheus that is down neither ends nor starts any node's maintenance."""
        answers: dict[str, list[dict[str, str]]] = {CORDON_SERIES: [], TAINT_SERIES: []}
        wanted = {CORDON_SERIES: CORDON_QUERY} if reads.cordoned else {}
        if reads.taints:
            wanted[TAINT_SERIES] = TAINT_QUERY
        for series, query in wanted.items():
            now = self._clock()
            try:
                answers[series] = await self._query(query)
            except _Failed as failed:
                self._failed(series, failed, now)
                failures.setdefault((failed.problem, failed.detail), []).append(series)
                return
            self._succeeded(series, now)
        self.book.took_maintenance(maintenance_of(reads, answers[CORDON_SERIES], answers[TAINT_SERIES]), self._clock())

    async def _refresh_pods(self, pod_labels: tuple[str, ...], failures: dict[tuple[str, str], list[str]]) -> None:
        """Read the pods' series into `pod_book`; a failure keeps what they last said (aged by keep_for)."""
        for series in POD_SERIES:
            name, now = f"{series}/pods", self._clock()
            try:
                labels = await self._query(pod_query(series, pod_labels))
            except _Failed as failed:
                self._failed(name, failed, now)
                self.pod_book.failed(series, failed.problem)
                failures.setdefault((failed.problem, failed.detail), []).append(name)
                continue
            await asyncio.to_thread(self.pod_book.took, series, labels, pod_labels, now)
            self._succeeded(name, now)
        await asyncio.to_thread(self.pod_book.resolve, self._clock())

    async def _query(self, expr: str) -> list[dict[str, str]]:
        try:
            response = await self._client.get(
                f"{self.config.url}/api/v1/query",
                params={"query": expr},
                headers=self._headers,
                timeout=self.config.timeout.total_seconds(),
            )
        except httpx.TimeoutException:
            raise _Failed("timeout", f"no answer within {self.config.timeout}") from None
        except httpx.HTTPError as exc:
            raise _Failed("unreachable", f"{type(exc).__name__}: {exc}"[:300]) from None
        if len(response.content) > _BODY_MAX:
            raise _Failed("bad_answer", f"answer of {len(response.content)} bytes is too large")
        labels = await asyncio.to_thread(decode_vector, response.content)
        if labels is not None:
            return labels
        try:
            # orjson: parsing holds the interpreter throughout (a big cluster's kube_pod_info is tens of
            # megabytes), and the standard library's parser took it 3-4 times as long.
            body = await asyncio.to_thread(orjson.loads, response.content)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if response.status_code != 200:
                raise _Failed("http_status", f"HTTP {response.status_code}") from None
            raise _Failed("bad_answer", "answer is not JSON") from None
        try:
            return await asyncio.to_thread(vector, body)
        except BadAnswer as exc:
            if isinstance(body, dict) and body.get("status") == "error":
                raise _Failed("query_error", f"HTTP {response.status_code}, {exc}") from None
            if response.status_code != 200:
                raise _Failed("http_status", f"HTTP {response.status_code}") from None
            raise _Failed("bad_answer", str(exc)) from None

    def _failed(self, series: str, failed: _Failed, now: datetime) -> None:
        if self._metrics is not None:
            self._metrics.node_lookup_errors.labels(series=series, problem=failed.problem).inc()
        current = self.problems.get(series)
        if current is None or (current.problem, current.detail) != (failed.problem, failed.detail):
            self.problems[series] = LookupProblem(series, failed.problem, failed.detail, now)

    def _succeeded(self, series: str, now: datetime) -> None:
        self.last_success[series] = now
        self.problems.pop(series, None)
        if self._metrics is not None:
            self._metrics.node_lookup_last_success.labels(series=series).set(now.timestamp())

    def _log_problems(self, failures: dict[tuple[str, str], list[str]]) -> None:
        """Each distinct problem once (Prometheus down is one problem for every series), until a refresh
        reads every series again."""
        if not failures:
            if self._logged:
                log.info("node lookup: every series reads from %s again", self.config.url)
                self._logged.clear()
            return
        for (problem, detail), series in failures.items():
            if (problem, detail) in self._logged:
                continue
            self._logged.add((problem, detail))
            log.warning(
                "node lookup: reading %s from %s failed (%s: %s); what they last said stays in force for "
                "up to %s, then learned and configured aliases only",
                ", ".join(series),
                self.config.url,
                problem,
                detail,
                self.book.keep_for,
            )

    def _observe(self) -> None:
        resolved = self.book.resolved
        for entry in resolved.conflicts:
            if (entry.key, entry.node) not in self._conflicts_logged:
                self._conflicts_logged.add((entry.key, entry.node))
                log.warning(
                    "node lookup: %s is claimed by %s and %s; %s wins (%s)",
                    entry.key,
                    entry.node,
                    ", ".join(entry.losers),
                    entry.node,
                    entry.source,
                )
        if len(self._conflicts_logged) > 10_000:
            self._conflicts_logged.clear()
        if self._metrics is None:
            return
        for source, n in resolved.by_source.items():
            self._metrics.node_lookup_names.labels(source=source).set(n)
        self._metrics.node_lookup_conflicts.set(len(resolved.conflicts))

    async def _loop(self) -> None:
        every = self.config.refresh.total_seconds()
        while not self._stopping.is_set():
            started = time.monotonic()
            try:
                await self.refresh()
            except Exception as exc:  # supervised: a bug must not end the lookup (names would age out)
                self._loops.failed(LOOP_NAME, exc)
            else:
                self._loops.passed(LOOP_NAME)
            self.answered.set()
            wait = max(0.0, every - (time.monotonic() - started))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stopping.wait(), wait)

    def start(self) -> None:
        self._loops.register(LOOP_NAME, interval=self.config.refresh.total_seconds())
        self._task = asyncio.create_task(self._loop(), name="alertrouter-node-lookup")

    async def stop(self) -> None:
        self._stopping.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        if self._own_client:
            await self._client.aclose()
