"""A heartbeat never heard from is waiting, not silent: on an injected clock against real databases, a fresh
install pages no one however long it waits or restarts, says once how to point its source at it, and
pages only once the source was heard and then went quiet; `warn_if_never_heard` asks for one warning."""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from alertrouter.ingest.touches import TouchBuffer
from alertrouter.ingest.writer import Ingestor
from alertrouter.liveness.watch import Step, blind_alert, blind_labels
from alertrouter.message.i18n import Locale
from alertrouter.metrics import Metrics
from alertrouter.store import Database
from alertrouter.store import heartbeats as store
from alertrouter.store.tables import AlertRow
from support.passes import T0, Clock, rows

from .test_monitor import NORTH, M, S, blind_alerts, monitor

HEARD = "prometheus-north"
WARNED = NORTH.model_copy(update={"warn_if_never_heard": timedelta(hours=1)})


async def test_a_source_never_heard_from_is_never_raised_and_is_told_once(
    db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    clock, metrics = Clock(), Metrics()
    hb = monitor(db, clock, metrics=metrics)
    with caplog.at_level(logging.INFO, logger="alertrouter.liveness.monitor"):
        for _ in range(3 * 24 * 12):  # three days of checks, one every five minutes
            assert await hb.check_once() == {}
            clock.now += 5 * M
    assert await blind_alerts(db) == []
    told = [r for r in caplog.records if HEARD in r.getMessage()]
    assert len(told) == 1  # once, not at every check
    assert told[0].levelno == logging.WARNING
    assert told[0].getMessage() == (
        "heartbeat prometheus-north: never heard from yet, waiting (nothing is raised until it is first heard): "
        'point Alertmanager at /webhook/alertmanager with a firing alert matching alertname="Watchdog", '
        'prometheus="monitoring/north" (rules/deploy/alertmanager.yml, rules/prometheus/watchdog.rules.yml), '
        "or POST /api/v1/heartbeats/prometheus-north with the webhook's credentials"
    )
    assert metrics.registry.get_sample_value("alertrouter_heartbeat_missing", {"heartbeat": HEARD}) == 0
    (status,) = await hb.statuses()
    assert (status.state, status.deadline) == ("waiting", None)


async def test_a_restart_while_waiting_pages_no_one(db: Database) -> None:
    clock = Clock()
    assert await monitor(db, clock, holder="a").check_once() == {}
    clock.now += 6 * M
    restarted = monitor(db, clock, holder="b")
    assert await restarted.check_once() == {}
    clock.now += 24 * 60 * M
    assert await restarted.check_once() == {}
    assert await blind_alerts(db) == []


async def test_heard_after_a_long_wait_then_silent_pages_from_its_sighting(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock)
    await hb.check_once()
    clock.now += 2 * 60 * M  # Prometheus pointed at it two hours after the install
    heard = clock.now
    await hb.seen([HEARD], via="alert")
    assert await hb.check_once() == {}
    clock.now += 5 * M
    assert await hb.check_once() == {HEARD: Step.RAISE}
    (alert,) = await blind_alerts(db)
    assert (alert.status, alert.starts_at, alert.labels["severity"]) == ("firing", heard, "critical")
    (status,) = await hb.statuses()
    assert status.state == "missing"


async def test_the_resolve_ends_at_the_first_sighting_back_however_many_come_before_the_check(
    db: Database,
) -> None:
    """Blind from its last sighting to its first one back: two sightings (another replica heard them) before
    the lease holder's next check, the second does not stretch the blind time."""
    clock = Clock()
    hb = monitor(db, clock)
    await hb.check_once()
    clock.now += M
    await hb.seen([HEARD], via="alert")
    clock.now += 5 * M
    assert await hb.check_once() == {HEARD: Step.RAISE}
    clock.now += 3 * M
    back = clock.now
    await hb.seen([HEARD], via="alert")
    clock.now += 10 * S
    await hb.seen([HEARD], via="alert")
    assert await hb.check_once() == {HEARD: Step.RESOLVE}
    (alert,) = await blind_alerts(db)
    assert (alert.status, alert.starts_at, alert.ends_at) == ("resolved", T0 + M, back)
    clock.now += 20 * S
    await hb.seen([HEARD], via="http")  # resolved: sightings move it again
    (status,) = await hb.statuses()
    assert (status.record.last_seen, status.record.seen_via) == (clock.now, "http")


async def test_a_blind_alert_raised_for_a_never_heard_source_before_the_upgrade_is_resolved(db: Database) -> None:
    """An older version paged "monitoring is blind" for a source never heard from: it is let go."""
    clock = Clock()
    hb = monitor(db, clock)
    await hb.check_once()
    labels = blind_labels(NORTH)
    await Ingestor(db, TouchBuffer(), clock=clock).ingest(blind_alert(labels, T0, locale=Locale("en", "UTC")))
    async with db.write() as session:
        await store.mark_missing(session, HEARD, T0, labels)
        await session.commit()
    clock.now += 6 * M
    assert await hb.check_once() == {HEARD: Step.RESOLVE}
    (alert,) = await blind_alerts(db)
    assert alert.status == "resolved"
    (status,) = await hb.statuses()
    assert status.state == "waiting"


async def test_warn_if_never_heard_raises_one_warning_resolved_when_first_heard(db: Database) -> None:
    clock = Clock()
    hb = monitor(db, clock, configs=[WARNED])
    await hb.check_once()
    (status,) = await hb.statuses()
    assert (status.state, status.deadline) == ("waiting", T0 + 60 * M)
    clock.now += 60 * M - S
    assert await hb.check_once() == {}
    clock.now += S
    restarted = monitor(db, clock, configs=[WARNED])  # a restart does not put it off
    assert await restarted.check_once() == {HEARD: Step.RAISE}
    (warning,) = [a for a in await rows(db, AlertRow) if a.labels["alertname"] == "AlertrouterHeartbeatNeverHeard"]
    assert warning.labels == {
        "alertname": "AlertrouterHeartbeatNeverHeard",
        "heartbeat": HEARD,
        "severity": "warning",
        "region": "north",
    }
    assert warning.starts_at == T0
    assert warning.annotations["summary"] == (
        "prometheus-north never heard from since 08:00 UTC: point its Prometheus and Alertmanager at alertrouter"
    )
    assert await blind_alerts(db) == []  # not "monitoring is blind"
    (status,) = await restarted.statuses()
    assert status.state == "waiting"
    clock.now += 24 * 60 * M
    assert await restarted.check_once() == {HEARD: Step.KEEP}  # one warning, kept, never raised again
    await restarted.seen([HEARD], via="alert")
    assert await restarted.check_once() == {HEARD: Step.RESOLVE}
    (warning,) = [a for a in await rows(db, AlertRow) if a.labels["alertname"] == "AlertrouterHeartbeatNeverHeard"]
    assert warning.status == "resolved"
    assert warning.annotations["summary"].startswith("prometheus-north never heard from since")
    clock.now += 5 * M  # heard, then silent: "monitoring is blind", critical
    assert await restarted.check_once() == {HEARD: Step.RAISE}
    (blind,) = await blind_alerts(db)
    assert blind.labels["severity"] == "critical"
