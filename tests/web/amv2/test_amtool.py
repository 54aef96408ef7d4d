"""The real `amtool` (Debian's prometheus-alertmanager package) against a running `alertrouter serve`, on
SQLite and PostgreSQL: alert query, silence add, silence query, silence expire, and its errors."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import TOKEN, Router, Store, gpu_labels, launch_router, wait_for, webhook, webhook_alert
from support import pg
from support.need import need
from support.procs import run_tool, tool

pytestmark = pytest.mark.e2e

WRITER = "amtool-writer-4c7e19b2d05a"  # a literal test credential, nothing real
STARTS = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
DOWN = {
    "alertname": "NodeDown",
    "Hostname": "gpu-node-07",
    "instance": "10.0.0.7:9100",
    "job": "node",
    "cluster": "gpu-prod-sh1",
    "severity": "critical",
}
HOT = gpu_labels(7, 2)  # under gpu-node-07's NodeDown: inhibited
ECC = gpu_labels(9, 5, alertname="GPUEccDoubleBitErrors", severity="critical")  # on its own: active


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Router]:
    """`alertrouter serve` with an API token for writes (besides the harness's read-only webhook token)."""
    name = None
    if request.param == "postgresql":
        problem = pg.available()
        need(problem is None, problem or "")
        name = pg.create_database("alertrouter_amtool")
        store = Store("postgresql", pg.url_for(name), pg_name=name)
    else:
        store = Store("sqlite", f"sqlite+aiosqlite:///{tmp_path / 'alertrouter.db'}")
    router = launch_router(store, tmp_path, {"ALERTROUTER_API_TOKENS": f"amtool:{WRITER}"})
    try:
        yield router
    finally:
        router.close()
        print(router.proc.logs()[-4000:])
        if name is not None:
            pg.drop_database(name)


class Amtool:
    def __init__(self, router: Router, workdir: Path) -> None:
        self.binary = tool("amtool", "prometheus-alertmanager")
        self.url = router.url
        self.writer = workdir / "amtool-writer.yml"
        self.writer.write_text(f"authorization:\n  credentials: {WRITER}\n")
        self.reader = workdir / "amtool-reader.yml"
        self.reader.write_text(f"authorization:\n  credentials: {TOKEN}\n")

    def __call__(self, *args: str, http: Path | None = None, ok: bool = True) -> tuple[str, str]:
        config = [f"--http.config.file={http}"] if http is not None else []
        done = run_tool([self.binary, f"--alertmanager.url={self.url}", *config, *args])
        assert (done.returncode == 0) is ok, (args, done.returncode, done.stdout, done.stderr)
        return done.stdout, done.stderr

    def read(self, *args: str, ok: bool = True) -> str:
        return self(*args, http=self.reader, ok=ok)[0]

    def write(self, *args: str, ok: bool = True) -> tuple[str, str]:
        return self(*args, http=self.writer, ok=ok)


def rows(table: str) -> dict[str, list[str]]:
    """amtool's table, one row per line, keyed by its first column."""
    return {line.split()[0]: line.split() for line in table.splitlines()[1:] if line.strip()}


def states(router: Router) -> dict[str, str]:
    r = router.http.get("/api/v2/alerts")
    assert r.status_code == 200, r.text
    found: list[dict[str, Any]] = r.json()
    return {a["labels"]["alertname"]: a["status"]["state"] for a in found}


def test_amtool_queries_silences_and_expires(served: Router, tmp_path: Path) -> None:
    amtool = Amtool(served, tmp_path)
    down = webhook_alert(DOWN, starts_at=STARTS, annotations={"summary": "gpu-node-07 does not answer"})
    alerts = [down, *(webhook_alert(labels, starts_at=STARTS) for labels in (HOT, ECC))]
    assert served.post_webhook(webhook(alerts)).status_code == 200
    wait_for(lambda: states(served).get("GPUHighTemp") == "suppressed", what="the NodeDown to inhibit GPUHighTemp")

    active = rows(amtool.read("alert", "query"))
    assert sorted(active) == ["GPUEccDoubleBitErrors", "NodeDown"]
    assert active["NodeDown"][-1] == "active"
    inhibited = rows(amtool.read("alert", "query", "--inhibited"))
    assert list(inhibited) == ["GPUHighTemp"]
    assert inhibited["GPUHighTemp"][-1] == "suppressed"
    extended = amtool.read("alert", "query", "-o", "extended", 'Hostname="gpu-node-09"')
    assert 'alertname="GPUEccDoubleBitErrors"' in extended
    assert "gpu-node-07" not in extended

    out, _ = amtool.write(
        "silence", "add", "alertname=GPUEccDoubleBitErrors", 'Hostname=~"gpu-node-0[89]"', "severity!=info",
        "-c", "RMA of GPU 5 on gpu-node-09", "-a", "alice", "-d", "2h",
    )  # fmt: skip
    silence_id = out.strip()
    assert str(uuid.UUID(silence_id)) == silence_id
    listed = amtool.read("silence", "query")
    assert silence_id in listed
    line = next(line for line in listed.splitlines() if line.startswith(silence_id))
    for word in ('alertname="GPUEccDoubleBitErrors"', 'Hostname=~"gpu-node-0[89]"', 'severity!="info"', "alice"):
        assert word in line
    assert "RMA of GPU 5 on gpu-node-09" in line
    assert amtool.read("silence", "query", "-q", "alertname=GPUEccDoubleBitErrors").split() == [silence_id]
    assert amtool.read("silence", "query", "-q", "alertname=NodeDown").split() == []

    wait_for(lambda: states(served).get("GPUEccDoubleBitErrors") == "suppressed", what="the silence to mute it")
    assert list(rows(amtool.read("alert", "query"))) == ["NodeDown"]
    assert rows(amtool.read("alert", "query", "--silenced"))["GPUEccDoubleBitErrors"][-1] == "suppressed"

    amtool.write("silence", "expire", silence_id)
    assert silence_id not in amtool.read("silence", "query")
    assert silence_id in amtool.read("silence", "query", "--expired")
    wait_for(lambda: states(served).get("GPUEccDoubleBitErrors") == "active", what="the expired silence to let go")


def test_amtool_shows_alertrouters_refusals(served: Router, tmp_path: Path) -> None:
    amtool = Amtool(served, tmp_path)
    _, err = amtool("alert", "query", "alertname=GPUHighTemp", "gpu=~(", http=amtool.reader, ok=False)
    assert "[GET /alerts][400]" in err
    assert "invalid matcher 'gpu=~(': invalid regular expression: missing )" in err
    _, err = amtool.write("silence", "add", 'gpu=~".*"', "-c", "everything", ok=False)
    assert "[POST /silences][400]" in err
    assert "at least one matcher must not match an empty value" in err
    _, err = amtool("silence", "add", "alertname=NodeDown", "-c", "reads only", http=amtool.reader, ok=False)
    assert "403" in err
    _, err = amtool("silence", "query", ok=False)
    assert "401" in err
    _, err = amtool.write("silence", "expire", "8b2f6e3c-4d6f-4c55-9f0e-3a7a1f2b9c10", ok=False)
    assert "404" in err
    assert not re.search(WRITER, err)
