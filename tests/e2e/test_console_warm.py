"""`alertrouter serve` compiles the console's pages and reads its filter menus as it starts, so that the
first views after a restart (often during the incident that made someone look) do not pay for them."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from e2e.harness import TOKEN, Router
from support.procs import start_alertrouter

pytestmark = pytest.mark.e2e

WARMED = re.compile(r"console warmed: (\d+) page templates compiled, filter menus read, [0-9.]+ s after the start")


def test_serve_warms_the_console_as_it_starts(tmp_path: Path) -> None:
    router = Router(
        start_alertrouter(tmp_path, database_url="sqlite:///warm.db", env={"ALERTROUTER_BEARER_TOKEN": TOKEN})
    )
    try:
        deadline = time.monotonic() + 30
        while (found := WARMED.search(router.proc.logs())) is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert found is not None, router.proc.logs()[-2000:]
        pages = len(list((Path(__file__).resolve().parents[2] / "templates" / "console").glob("*.j2")))
        assert int(found.group(1)) == pages * 2  # English and Chinese
        assert router.http.get("/incidents").status_code == 200
    finally:
        router.close()
