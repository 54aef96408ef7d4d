"""A hostile alert (20,000-character label and annotation values, 200 extra labels) keeps every console
page small: values are cut at VALUE_CAP with a note, at most LABELS_SHOWN labels per alert are listed,
and the JSON API still gives the whole values."""

from __future__ import annotations

import re
from datetime import timedelta

from sqlalchemy import update

from alertrouter.auth.links import Action, action_link
from alertrouter.model import utcnow
from alertrouter.store.tables import AlertRow, IncidentRow
from alertrouter.web.console.views import LABELS_SHOWN, VALUE_CAP
from support.scenario import gpu_labels

from .conftest import TOKEN, App

HUGE = "Z" * 20_000
PAGE_LIMIT = 60_000  # bytes: the page of a hostile alert was 303 KB before the caps
ONE_HOUR = timedelta(hours=1)
CUT = re.compile(r"… \((\d+) more characters\)")  # after VALUE_CAP characters of a value


def hostile(labels: dict[str, str]) -> dict[str, str]:
    extra = {f"extra_{i:03d}": "v" * 300 for i in range(200)}
    return {**labels, "pod": HUGE, "region": HUGE, **extra}


async def seed_hostile(app: App) -> tuple[int, str, int]:
    """(incident id, fingerprint, labels in the alert). The rows are written as a store holding such an
    alert has them, whatever limits the ingest applies today: the console must not trust its input."""
    await app.seed([gpu_labels("gpu-node-07", 0, region="north")])
    incident = await app.incident_id("gpu-node-07")
    fingerprint = (await app.client.get("/api/v1/alerts", headers=TOKEN)).json()["alerts"][0]["fingerprint"]
    async with app.runtime.db.write() as session:
        alert = await session.get(AlertRow, fingerprint)
        assert alert is not None
        labels = hostile(dict(alert.labels))
        await session.execute(
            update(AlertRow)
            .where(AlertRow.fingerprint == fingerprint)
            .values(labels=labels, annotations={"summary": HUGE, "description": HUGE})
        )
        row = await session.get(IncidentRow, incident)
        assert row is not None
        await session.execute(
            update(IncidentRow)
            .where(IncidentRow.id == incident)
            .values(labels=hostile(dict(row.labels)), headline=f"GPUHighTemp on {HUGE}")
        )
        await session.commit()
    return incident, fingerprint, len(labels)


async def test_a_hostile_alert_keeps_every_console_page_small(app: App) -> None:
    incident, fingerprint, count = await seed_hostile(app)
    await app.login()
    signer = app.runtime.signers.link
    token_url = action_link(signer, "http://ar", Action.ACK, incident, now=utcnow(), ttl=ONE_HOUR)
    pages = ["/incidents", "/incidents?status=all", f"/incidents/{incident}", token_url.removeprefix("http://ar")]
    for path in pages:
        r = await app.client.get(path)
        assert r.status_code == 200, (path, r.status_code)
        assert len(r.content) < PAGE_LIMIT, (path, len(r.content))
        assert CUT.search(r.text), path
        assert HUGE[: VALUE_CAP + 1] not in r.text, path
    detail = (await app.client.get(f"/incidents/{incident}")).text
    assert f"… {count - LABELS_SHOWN} more labels" in detail
    assert f"… ({len(HUGE) - VALUE_CAP} more characters)" in detail  # the summary annotation

    whole = (await app.client.get(f"/api/v1/alerts/{fingerprint}", headers=TOKEN)).json()["alert"]
    assert whole["labels"]["pod"] == HUGE  # the API keeps the whole value
    assert whole["annotations"]["summary"] == HUGE
    assert len(whole["labels"]) == count
