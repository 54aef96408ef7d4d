"""`pip install alertrouter` from the wheel works away from the repository: the wheel is built as a release
builds it, installed into a fresh virtualenv outside the repo (its dependencies from the package index), and
its `alertrouter` command is run from a directory with no rules/, no PYTHONPATH and no ALERTROUTER_*
variable: `check-config` on the shipped rules, `db upgrade` on a new SQLite file, and `serve` until /readyz
answers, whose console page in zh-CN shows an XID's meaning (templates, catalogue, rules and xid.csv from the
wheel) and whose /docs loads its assets (the declared fastapi-offline)."""

from __future__ import annotations

import html
import os
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from alertrouter.auth.passwords import hash_password
from alertrouter.store.migrate import head_revision
from alertrouter.web.console.language import LANGUAGE_COOKIE
from support.procs import REPO, Proc, free_port
from support.scenario import dcgm_labels
from support.webhooks import webhook

pytestmark = pytest.mark.e2e

HOOK_TOKEN = "hook-token-5d1f-0123456"
API_TOKEN = "api-token-9c2e-0123456"
PASSWORD = "correct horse battery"
# What the wheel must carry besides the package's modules: `git ls-files` of these, under alertrouter/_data/
# for the force-included top-level folders (pyproject.toml), in place for the package's own data.
SHIPPED = {"rules": "alertrouter/_data/rules", "templates": "alertrouter/_data/templates"}
SHIPPED |= {"migrations": "alertrouter/_data/migrations", "alertrouter": "alertrouter"}


@dataclass
class Installed:
    wheel: Path
    bin: Path  # the fresh virtualenv's bin/
    site: Path  # where alertrouter was installed
    cwd: Path  # an empty directory outside the repo
    env: dict[str, str]

    def run(self, *args: str, extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / "alertrouter"), *args],
            cwd=self.cwd,
            env={**self.env, **(extra or {})},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


def clean_env() -> dict[str, str]:
    """This process's environment without what points into the repo (PYTHONPATH) or configures alertrouter."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("ALERTROUTER_")}


def step(args: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{args[:4]} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("wheel")
    assert not root.is_relative_to(REPO)
    env = clean_env()
    dist, venv, cwd = root / "dist", root / "venv", root / "cwd"
    cwd.mkdir()
    # pip builds it as `docker build` does (deploy/docker/Dockerfile): hatchling in an isolated build env.
    step([sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(dist), str(REPO)], root, env)
    (wheel,) = dist.glob("alertrouter-*.whl")
    step([sys.executable, "-m", "venv", str(venv)], root, env)
    step([str(venv / "bin" / "python"), "-m", "pip", "install", str(wheel)], root, env)
    where = step([str(venv / "bin" / "python"), "-c", "import alertrouter; print(alertrouter.__file__)"], cwd, env)
    site = Path(where.strip()).parent
    return Installed(wheel=wheel, bin=venv / "bin", site=site, cwd=cwd, env=env)


def test_the_package_imported_is_the_installed_one(installed: Installed) -> None:
    assert installed.site.is_relative_to(installed.bin.parent), installed.site
    assert not installed.site.is_relative_to(REPO)


def test_the_wheel_carries_every_shipped_file(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    tracked = step(["git", "ls-files", *SHIPPED], REPO, clean_env()).split()
    assert len(tracked) > 200, "git ls-files found the repo's files"
    missing = []
    for path in tracked:
        top, _, rest = path.partition("/")
        if f"{SHIPPED[top]}/{rest}" not in names:
            missing.append(path)
    assert missing == []
    assert "alertrouter/locale/zh_CN/LC_MESSAGES/messages.po" in names
    assert "alertrouter/data/xid.csv" in names


def test_check_config_reads_the_shipped_rules(installed: Installed) -> None:
    """With no ALERTROUTER_CONFIG and no ./rules, the rules the wheel ships are the default."""
    done = installed.run("check-config")
    assert done.returncode == 0, done.stdout + done.stderr
    rules = installed.site / "_data" / "rules"
    assert f" file(s) in {rules}, config hash " in done.stdout, done.stdout


def test_db_upgrade_creates_the_schema_in_a_new_sqlite_file(installed: Installed) -> None:
    database = installed.cwd / "upgraded.db"
    done = installed.run("db", "upgrade", extra={"ALERTROUTER_DATABASE_URL": f"sqlite:///{database}"})
    assert done.returncode == 0, done.stdout + done.stderr
    with sqlite3.connect(database) as db:
        (version,) = db.execute("SELECT version_num FROM alembic_version").fetchone()
        tables = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert version == head_revision(), "the wheel's migrations end where the repo's do"
    assert {"alerts", "incidents"} <= tables, tables


@pytest.fixture(scope="module")
def served(installed: Installed) -> Iterator[Proc]:
    port = free_port()
    log = installed.cwd / "serve.log"
    env = {
        **installed.env,
        "ALERTROUTER_DATABASE_URL": f"sqlite+aiosqlite:///{installed.cwd / 'served.db'}",
        "ALERTROUTER_HOST": "127.0.0.1",
        "ALERTROUTER_PORT": str(port),
        "ALERTROUTER_BEARER_TOKEN": HOOK_TOKEN,
        "ALERTROUTER_API_TOKENS": f"ci:{API_TOKEN}",
        "ALERTROUTER_CONSOLE_USERS": f"alice:{hash_password(PASSWORD, iterations=1000)}",
        "ALERTROUTER_SECRET_KEY": "packaging-tests-secret-key-0123456789",
        "ALERTROUTER_ENGINE_INTERVAL": "200ms",
        "ALERTROUTER_DELIVER": "false",
        "ALERTROUTER_SCHEDULER": "false",
    }
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [str(installed.bin / "alertrouter"), "serve"], cwd=installed.cwd, env=env, stdout=out, stderr=out
        )
    proc = Proc("alertrouter", popen, f"http://127.0.0.1:{port}", log)
    try:
        proc.wait_ready("/readyz", timeout=60)
        yield proc
    finally:
        proc.stop()


def test_serve_runs_on_the_shipped_rules(installed: Installed, served: Proc) -> None:
    assert httpx.get(served.url + "/readyz", timeout=5).status_code == 200
    assert f"rules {installed.site / '_data' / 'rules'}" in served.logs()


def test_the_chinese_console_says_what_an_xid_means(served: Proc) -> None:
    k8s = {"exported_namespace": "ml-team", "exported_container": "trainer", "node": "gpu-node-07", "xid": "79"}
    alert = dcgm_labels("10.0.0.7", "gpu-node-07", 6, "GPUFallenOffBus", err_code="79", exported_pod="llama-3", **k8s)
    hook = {"Authorization": f"Bearer {HOOK_TOKEN}"}
    r = httpx.post(served.url + "/webhook/alertmanager", content=webhook([alert]), headers=hook, timeout=10)
    assert r.status_code == 200, r.text
    incident = None
    deadline = time.monotonic() + 30
    while incident is None and time.monotonic() < deadline:
        listed = httpx.get(served.url + "/api/v1/incidents", headers={"Authorization": f"Bearer {API_TOKEN}"})
        incident = next((i["id"] for i in listed.json()["incidents"] if "GPUFallenOffBus" in i["headline"]), None)
        time.sleep(0.2)
    assert incident is not None, served.logs()
    with httpx.Client(base_url=served.url, cookies={LANGUAGE_COOKIE: "zh-CN"}, timeout=10) as console:
        login = console.post("/login", data={"user": "alice", "password": PASSWORD, "next": "/incidents"})
        assert login.status_code == 303, login.text
        page = console.get(f"/incidents/{incident}")
    assert page.status_code == 200
    text = html.unescape(page.text)
    assert '<html lang="zh-CN"' in text
    assert "XID 79（GPU 6）：GPU 已从总线掉线 — 处理：重启节点" in text
    assert "工作负载：ml-team/llama-3" in text


def test_the_api_docs_load_their_assets(served: Proc) -> None:
    for page, assets in {
        "/docs": ["swagger-ui-bundle.js", "swagger-ui.css", "favicon.png"],
        "/redoc": ["redoc.standalone.js"],
    }.items():
        assert httpx.get(served.url + page, timeout=5).status_code == 200
        for asset in assets:
            r = httpx.get(f"{served.url}/static/docs/{asset}", timeout=5)
            assert r.status_code == 200, asset
            assert len(r.content) > 1000, asset
