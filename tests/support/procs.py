"""Real processes on free loopback ports: alertrouter itself and Debian's prometheus-alertmanager."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
ALERTROUTER = str(Path(sys.executable).with_name("alertrouter"))
ALERTMANAGER = shutil.which("prometheus-alertmanager") or shutil.which("alertmanager")


# Under pytest-xdist each worker hands out ports from its own range, below the kernel's ephemeral ones
# (32768 up): a port chosen by one worker and not yet bound by the process it is for was otherwise free for
# the other worker to choose too (an Alertmanager's gossip port then met another test's Alertmanager).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
_PORTS_PER_WORKER = 2_500
_next_port = [int.from_bytes(os.urandom(2), "big") % _PORTS_PER_WORKER]


def free_port() -> int:
    """A loopback port nothing listens on now, for a process a test starts."""
    worker = int(_WORKER[2:]) if _WORKER.startswith("gw") and _WORKER[2:].isdigit() else None
    if worker is None or worker >= 8:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port: int = s.getsockname()[1]
            return port
    low = 10_000 + worker * _PORTS_PER_WORKER
    for _ in range(_PORTS_PER_WORKER):  # in turn, so two calls before either port is bound differ
        port = low + _next_port[0] % _PORTS_PER_WORKER
        _next_port[0] += 1
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {low}-{low + _PORTS_PER_WORKER - 1}")


@dataclass
class Proc:
    name: str
    popen: subprocess.Popen[bytes]
    url: str
    log: Path

    def logs(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_ready(self, path: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.popen.returncode}:\n{self.logs()}")
            try:
                if httpx.get(self.url + path, timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise TimeoutError(f"{self.name} not ready at {self.url}{path} after {timeout}s:\n{self.logs()}")

    def kill9(self) -> None:
        self.popen.send_signal(signal.SIGKILL)
        self.popen.wait(10)

    def stop(self) -> int:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        return self.popen.returncode


def start_alertrouter(
    workdir: Path,
    *,
    database_url: str,
    env: Mapping[str, str] | None = None,
    port: int | None = None,
    config: Path | None = None,
    ready: bool = True,
) -> Proc:
    port = port or free_port()
    log = workdir / f"alertrouter-{port}.log"
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ALERTROUTER_")},
        "ALERTROUTER_DATABASE_URL": database_url,
        "ALERTROUTER_PORT": str(port),
        "ALERTROUTER_HOST": "127.0.0.1",
        "ALERTROUTER_CONFIG": str(config or REPO / "rules"),
        "ALERTROUTER_LOG_LEVEL": "DEBUG",
        **(env or {}),
    }
    with log.open("ab") as out:
        popen = subprocess.Popen(
            [ALERTROUTER, "serve"], env=full_env, stdout=out, stderr=subprocess.STDOUT, cwd=workdir
        )
    proc = Proc("alertrouter", popen, f"http://127.0.0.1:{port}", log)
    if ready:
        proc.wait_ready("/readyz")
    return proc


def start_alertmanager(workdir: Path, config_yaml: str, *, extra_args: tuple[str, ...] = ()) -> Proc:
    """A real Alertmanager with clustering off, on a free port, with its own storage dir."""
    if ALERTMANAGER is None:
        raise RuntimeError("prometheus-alertmanager is not installed (bash .ci/setup installs it)")
    port = free_port()
    am_dir = workdir / f"alertmanager-{port}"
    am_dir.mkdir()
    config = am_dir / "alertmanager.yml"
    config.write_text(config_yaml)
    log = am_dir / "alertmanager.log"
    args = [
        ALERTMANAGER,
        f"--config.file={config}",
        f"--storage.path={am_dir / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
        *extra_args,
    ]
    with log.open("ab") as out:
        popen = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, cwd=am_dir)
    proc = Proc("alertmanager", popen, f"http://127.0.0.1:{port}", log)
    proc.wait_ready("/-/ready")
    return proc


def tool(name: str, package: str) -> str:
    """The path of a command-line tool a test runs (promtool, amtool); missing, the test fails under CI
    (`need`) and names the Debian package that has it."""
    from support.need import need

    found = shutil.which(name)
    need(found is not None, f"{name} not installed (apt-get install -y {package})")
    assert found is not None
    return found


def run_tool(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run a command-line tool to its end (at most two minutes), its output captured as text."""
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)
