"""`alertrouter serve` on database URLs as people write them (issue 13): the plain `sqlite:///` and
`postgresql://` forms run on the async drivers; a URL that cannot work stops serve with one line naming
ALERTROUTER_DATABASE_URL, the password masked, and no traceback."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from e2e.harness import TOKEN, Router, webhook, webhook_alert
from support import pg
from support.need import need
from support.procs import free_port, start_alertrouter
from support.scenario import dcgm_labels

pytestmark = pytest.mark.e2e


def _serve(workdir: Path, url: str) -> Router:
    return Router(start_alertrouter(workdir, database_url=url, env={"ALERTROUTER_BEARER_TOKEN": TOKEN}))


def _stores_a_webhook(router: Router) -> None:
    labels = dcgm_labels("10.0.0.7", "gpu-node-07", 3, alertname="GPUHighTemp", severity="warning")
    r = router.post_webhook(webhook([webhook_alert(labels, starts_at=datetime.now(UTC))]))
    assert r.status_code == 200, r.text
    assert [a["labels"]["alertname"] for a in router.alerts()] == ["GPUHighTemp"]


def test_plain_sqlite_url(tmp_path: Path) -> None:
    router = _serve(tmp_path, "sqlite:///plain.db")  # relative to the working directory, as SQLAlchemy reads it
    try:
        _stores_a_webhook(router)
        assert router.metric("alertrouter_build_info") == 1
    finally:
        router.close()
    assert (tmp_path / "plain.db").stat().st_size > 0


@pytest.mark.postgres
@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_plain_postgresql_url(tmp_path: Path, scheme: str) -> None:
    problem = pg.available()
    need(problem is None, problem or "")
    name = pg.create_database("alertrouter_url")
    try:
        url = pg.url_for(name).replace("postgresql+asyncpg://", f"{scheme}://", 1) + "?sslmode=disable"
        router = _serve(tmp_path, url)
        try:
            _stores_a_webhook(router)
        finally:
            router.close()
    finally:
        pg.drop_database(name)


def _refused(tmp_path: Path, url: str) -> tuple[int, str]:
    proc = start_alertrouter(tmp_path, database_url=url, env={"ALERTROUTER_BEARER_TOKEN": TOKEN}, ready=False)
    try:
        code = proc.popen.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.stop()
        pytest.fail(f"serve kept running on {url}:\n{proc.logs()[-2000:]}")
    return code, proc.logs()


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (f"postgresql://alertrouter:hunter2secret@127.0.0.1:{free_port()}/alertrouter", "Connect call failed"),
        ("sqlite:////nonexistent-dir/alertrouter.db", "the directory /nonexistent-dir of the SQLite file does not"),
        ("mysql://alertrouter:hunter2secret@127.0.0.1/alertrouter", "unsupported database 'mysql'"),
    ],
    ids=["postgresql-nobody-listening", "sqlite-no-directory", "mysql"],  # the same on every xdist worker
)
def test_a_url_that_cannot_work_is_one_line(tmp_path: Path, url: str, says: str) -> None:
    code, logs = _refused(tmp_path, url)
    assert code != 0
    lines = [line for line in logs.splitlines() if "ALERTROUTER_DATABASE_URL" in line]
    assert len(lines) == 1, logs
    assert says in lines[0]
    assert "Traceback" not in logs
    assert "hunter2secret" not in logs
