"""A hostile alert (20,000-character label and annotation values, 200 extra labels) keeps every console
page small: values are cut at VALUE_CAP with a note, at most LABELS_SHOWN labels per alert are listed,
and the JSON API still gives the whole values."""

from __future__ import annotations

import re
from datetime import timedelta

from markupsafe import escape
from sqlalchemy import update

from alertrouter.auth.links import Action, action_link
from alertrouter.model import utcnow
from alertrouter.store.tables import AlertRow, IncidentRow, SilenceRow
from alertrouter.web.console.silences import BY_SHOWN, COMMENT_SHOWN, MATCHER_SHOWN
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


def nodes_regex(size: int) -> str:
    """`node=~"gpu-node-0001|gpu-node-0002|..."`, as a silence of a whole rack is written, `size` long."""
    names = "|".join(f"gpu-node-{i:04d}" for i in range(1, size // 14 + 2))
    return f'node=~"{names}"'[: size - 1] + '"'


async def test_the_silences_page_caps_long_matchers_comments_and_names(app: App) -> None:
    """The list shows a head of each and "… (N more characters)"; the whole value is the cell's title."""
    matcher = nodes_regex(4096)
    comment = "; ".join(["PSU swap in rack r12, ticket OPS-4411"] * 25)  # 973 characters: the API takes 1,000
    by = "token:" + "ci-nightly-gpu-burnin-" * 11  # a long API token name, as stored (255 at most)
    created = await app.client.post(
        "/api/v1/silences",
        json={"matchers": [matcher, 'alertname="GPUXidError"'], "duration": "2h", "comment": comment},
        headers=TOKEN,
    )
    assert created.status_code == 201, created.text
    silence_id = created.json()["id"]
    assert created.json()["matchers"][0] == matcher  # stored whole
    async with app.runtime.db.write() as session:
        await session.execute(update(SilenceRow).where(SilenceRow.id == silence_id).values(created_by=by))
        await session.commit()
    await app.login()

    page = (await app.client.get("/silences")).text
    row = page[page.index(f'<tr id="s-{silence_id}"') :]
    row = row[: row.index("</tr>")]
    shown = re.sub(r' title="[^"]*"', "", row)  # what the row shows, without what shows on hover
    for value, limit in ((matcher, MATCHER_SHOWN), (comment, COMMENT_SHOWN), (by, BY_SHOWN)):
        escaped = escape(value)
        assert escaped not in shown, value[:40]
        assert f'title="{escaped}"' in row, value[:40]  # the whole value, on hover
        head = escape(value[:limit])
        assert f"{head}… ({len(value) - limit} more characters)" in shown, value[:40]
    assert escape('alertname="GPUXidError"') in shown  # a short matcher is shown as it is
    assert len(shown) < 2_000
