"""`alertrouter serve` as a process: a non-loopback address without the webhook credential stops it with one
line saying what to set, rather than listening on loopback behind the operator's back; with the credential
(or the explicit opt-out) it listens where it was asked.

Where it listens is read from outside: the whole of 127.0.0.0/8 is the loopback interface on Linux, so a
server bound to 0.0.0.0 answers on 127.0.0.2 and one bound to 127.0.0.1 does not."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import httpx
import pytest

from support.procs import ALERTROUTER, Proc, free_port, start_alertrouter

TOKEN = "serve-listen-token-0123456789"
API_TOKENS = "ci:serve-listen-api-token-0123"
SETTING_TO_SET = "ALERTROUTER_BEARER_TOKEN"


def refused(tmp_path: Path, env: dict[str, str]) -> tuple[int, str]:
    """The exit status and log of a `serve` that must stop on its own (30 s: it used to listen forever)."""
    proc = start_alertrouter(tmp_path, database_url=f"sqlite:///{tmp_path / 'ar.db'}", env=env, ready=False)
    try:
        code = proc.popen.wait(30)
    except subprocess.TimeoutExpired:
        proc.stop()
        pytest.fail(f"serve kept running with {env}:\n{proc.logs()}")
    return code, proc.logs()


@pytest.mark.parametrize(
    "env",
    [
        {"ALERTROUTER_HOST": "0.0.0.0"},
        {"ALERTROUTER_HOST": "10.1.2.3"},
        {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_BEARER_TOKEN": ""},
    ],
)
def test_a_remote_address_without_a_credential_stops_serve_saying_what_to_set(
    tmp_path: Path, env: dict[str, str]
) -> None:
    code, logs = refused(tmp_path, env)
    assert code == 2
    (line,) = [line for line in logs.splitlines() if "refusing to start" in line]
    host = env["ALERTROUTER_HOST"]
    assert f"listening on {host} (ALERTROUTER_HOST or --host) needs the credential Alertmanager sends" in line
    assert SETTING_TO_SET in line
    assert "ALERTROUTER_BASIC_USERNAME and ALERTROUTER_BASIC_PASSWORD" in line
    assert "ALERTROUTER_HOST=127.0.0.1" in line
    assert "listening on loopback only" not in logs  # the old quiet fallback
    assert not (tmp_path / "ar.db").exists()  # stopped before it touched the store


def test_console_users_and_api_tokens_do_not_open_a_remote_address(tmp_path: Path) -> None:
    """They guard the console and the API; the webhook would still take anyone's alerts."""
    code, logs = refused(tmp_path, {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_API_TOKENS": API_TOKENS})
    assert code == 2
    assert "(ALERTROUTER_API_TOKENS protect the console and the API only, not the webhook)" in logs
    assert SETTING_TO_SET in logs
    assert "serve-listen-api-token" not in logs


def test_the_host_flag_is_checked_as_the_variable_is(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'ar.db'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("ALERTROUTER_")}
    command = [ALERTROUTER, "serve", "--host", "0.0.0.0", "--database-url", db]
    try:
        run = subprocess.run(command, env=env, capture_output=True, text=True, timeout=30, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("serve --host 0.0.0.0 kept running without a credential")
    assert run.returncode == 2
    assert "refusing to start: listening on 0.0.0.0 (ALERTROUTER_HOST or --host)" in run.stderr


def answers(url: str) -> bool:
    try:
        return httpx.get(url + "/healthz", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.mark.parametrize(
    "env",
    [
        {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_BEARER_TOKEN": TOKEN},
        {"ALERTROUTER_HOST": "0.0.0.0", "ALERTROUTER_ALLOW_UNAUTHENTICATED_REMOTE": "true"},
    ],
)
def test_with_a_credential_or_the_opt_out_serve_listens_where_it_was_asked(tmp_path: Path, env: dict[str, str]) -> None:
    port = free_port()
    proc: Proc = start_alertrouter(tmp_path, database_url=f"sqlite:///{tmp_path / 'ar.db'}", env=env, port=port)
    try:
        assert answers(f"http://127.0.0.2:{port}")  # 0.0.0.0, not only 127.0.0.1
        assert f"listening on 0.0.0.0:{port}" in proc.logs()
    finally:
        proc.stop()


def test_without_a_credential_nor_an_address_serve_listens_on_loopback_only(tmp_path: Path) -> None:
    """The default stays: no address asked for, none taken but loopback."""
    port = free_port()
    env = {"ALERTROUTER_HOST": ""}
    proc = start_alertrouter(tmp_path, database_url=f"sqlite:///{tmp_path / 'ar.db'}", env=env, port=port)
    try:
        assert not answers(f"http://127.0.0.2:{port}")
        assert "listening on loopback only" in proc.logs()
    finally:
        proc.stop()
