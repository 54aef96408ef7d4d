"""docker-compose.yml's services as processes on loopback, with exactly the files, arguments and environment
the compose file gives them: the stand-in for `docker compose up` where there is no Docker engine.

Read from the compose file (nothing here repeats it): each service's command, environment (interpolated from
a `.env` the caller gives, with compose's `${VAR:?err}`/`${VAR:-default}` rules and pass-through of variables
given without a value), bind mounts, named volumes, secrets, healthchecks and `depends_on`; for the service
built from the repo, the Dockerfile's ENTRYPOINT, CMD, ENV and WORKDIR. What a container has and a process
has not is replaced by one small, explicit rule each, and anything the rules do not cover fails loudly:

- Filesystem: each service gets a root directory; a container path `/x/y` is `<root>/x/y`. Bind mounts are
  copied there, named volumes are empty directories there, secrets are files there (with the secret's mode).
  Absolute paths in arguments, in the environment and in the mounted config files are read inside that root.
- Network: compose's name-based addresses (`alertmanager:9093`, `alertrouter:9095`, `postgres:5432`, and
  `localhost:9090`, Prometheus scraping itself) become `127.0.0.1:<free port>` (`CONTAINER_PORTS`); each
  server is told to listen there (`--web.listen-address`, `ALERTROUTER_HOST`/`ALERTROUTER_PORT`).
  An address `<service>:<port>` the mapping does not know is an error, not a silent miss.
- Images: `prom/prometheus` and `prom/alertmanager` are Debian's prometheus and prometheus-alertmanager
  (the same programs, older versions); the image built from the repo is the virtualenv's `alertrouter`;
  `postgres` is the local PostgreSQL server (tests/support/pg.py) with a throwaway database in place of
  POSTGRES_DB, reached with the POSTGRES_USER and POSTGRES_PASSWORD compose gives.
- Alertmanager's gossip listens on a free loopback port (compose lets it take :9094 on the container's
  private address; a shared machine has neither).
- Scrape targets that are not compose services (rules/deploy/prometheus.yml's placeholder GPU nodes) are
  scraped through `scrape_proxy`, an HTTP proxy the caller runs that answers for those host names, so the
  targets, and the `node` label relabelled from them, stay exactly as written.

`ComposeStack.prepare()` lays out every root (the caller may then edit a copied file, e.g. point a channel at a
fake vendor), `start()` starts the services in `depends_on` order, each after its dependencies' healthchecks
pass, and `stop()` stops them. Reading the files and `drift()` (what the compose file has that this module does
not reproduce: the constructor refuses to start then) are in support/composefile.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import yaml

from support.composefile import (
    CONTAINER_PORTS,
    IMAGE_PROGRAMS,
    ComposeError,
    drift,
    image_of,
    interpolate,
    load_compose,
)
from support.procs import ALERTROUTER, REPO, Proc, free_port

__all__ = ["ComposeStack", "Service"]

# Of the host's environment a process sees only these (a container sees none of it).
HOST_ENV = ("PATH", "PYTHONPATH", "LANG", "LC_ALL")


@dataclass
class Service:
    """One compose service laid out as a process: its root directory and what it was given."""

    name: str
    spec: dict[str, Any]
    root: Path
    port: int
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: Path | None = None
    proc: Proc | None = None
    host: str = "127.0.0.1"

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def path(self, inside: str) -> Path:
        """Where the container path `inside` is here."""
        return self.root / inside.lstrip("/")


class ComposeStack:
    """The compose file's services as processes in `work`. `dot_env` plays the `.env` file (and the shell);
    `postgres` is the local server's (host, port) and the throwaway database that replaces POSTGRES_DB."""

    def __init__(
        self, work: Path, dot_env: Mapping[str, str], *, postgres: tuple[str, int, str], scrape_proxy: str
    ) -> None:
        self.work = work
        self.dot_env = dict(dot_env)
        self.postgres = postgres
        self.scrape_proxy = scrape_proxy
        self.compose: dict[str, Any] = interpolate(load_compose(), self.dot_env)
        problems = drift(self.compose)
        if problems:
            raise ComposeError(
                "docker-compose.yml has what the process stand-in does not reproduce: " + "; ".join(problems)
            )
        self.services: dict[str, Service] = {}
        self.postgres_env: dict[str, str] = {}
        self.proxied_jobs: list[str] = []

    # -- layout ------------------------------------------------------------------------------------
    def wiring(self) -> dict[str, str]:
        """compose's network: `<service>:<container port>` -> where that service listens here."""
        mapping = {f"{name}:{CONTAINER_PORTS[name]}": s.address for name, s in self.services.items()}
        mapping["localhost:9090"] = self.services["prometheus"].address  # Prometheus scraping itself
        return mapping

    def rewire(self, text: str, where: str) -> str:
        mapping = self.wiring()
        names = "|".join(re.escape(name) for name in [*CONTAINER_PORTS, "localhost"])

        def swap(match: re.Match[str]) -> str:
            if match[0] not in mapping:
                raise ComposeError(f"{where}: {match[0]} is no address the stand-in knows (see CONTAINER_PORTS)")
            return mapping[match[0]]

        return re.sub(rf"(?<![\w.-])(?:{names}):\d+\b", swap, text)

    def relocate(self, service: Service, text: str) -> str:
        """Container paths mounted in `service` (volumes, secrets), written as paths under its root."""
        targets = sorted(self._targets(service), key=len, reverse=True)
        if not targets:
            return text
        pattern = "|".join(re.escape(target) for target in targets)
        return re.sub(rf"(?<![\w./-])(?:{pattern})(?![\w-])", lambda m: str(service.path(m[0])), text)

    def _targets(self, service: Service) -> list[str]:
        mounts = [volume.split(":")[1] for volume in service.spec.get("volumes") or []]
        return mounts + [secret["target"] for secret in service.spec.get("secrets") or []]

    def prepare(self) -> None:
        for name, spec in self.compose["services"].items():
            root = self.work / name
            root.mkdir(parents=True)
            if name == "postgres":  # the local server
                self.services[name] = Service(name, spec, root, self.postgres[1], host=self.postgres[0])
            else:
                self.services[name] = Service(name, spec, root, free_port())
        for service in self.services.values():
            self._mount(service)
        self._lay_out_postgres()
        self._lay_out_alertrouter()
        self._lay_out_alertmanager()
        self._lay_out_prometheus()

    def _mount(self, service: Service) -> None:
        for volume in service.spec.get("volumes") or []:
            source, target = volume.split(":")[:2]
            here = service.path(target)
            if not source.startswith("./"):  # a named volume: empty at first start
                here.mkdir(parents=True)
                continue
            origin = REPO / source
            if origin.is_dir():
                shutil.copytree(origin, here)
                continue
            here.parent.mkdir(parents=True, exist_ok=True)
            text = origin.read_text(encoding="utf-8")  # a config file: read in this network and filesystem
            here.write_text(self.relocate(service, self.rewire(text, f"{service.name}: {source}")), encoding="utf-8")
        for secret in service.spec.get("secrets") or []:
            here = service.path(secret["target"])
            here.parent.mkdir(parents=True, exist_ok=True)
            variable = self.compose["secrets"][secret["source"]]["environment"]
            here.write_text(self.dot_env[variable], encoding="utf-8")
            mode = secret.get("mode", "0o444")
            here.chmod(int(mode, 0) if isinstance(mode, str) else int(mode))

    def _environment(self, service: Service) -> dict[str, str]:
        """The container's environment: values given, and variables without a value passed through if set."""
        raw = service.spec.get("environment") or {}
        if isinstance(raw, list):
            raw = dict(item.split("=", 1) if "=" in item else (item, None) for item in raw)
        env = {}
        for key, value in raw.items():
            if value is not None:
                env[key] = str(value)
            elif key in self.dot_env:
                env[key] = self.dot_env[key]
        return env

    def _lay_out_postgres(self) -> None:
        env = self._environment(self.services["postgres"])
        self.postgres_env = env  # POSTGRES_DB/USER/PASSWORD: checked against alertrouter's URL below

    def _lay_out_alertrouter(self) -> None:
        service = self.services["alertrouter"]
        image = image_of(REPO / service.spec["build"]["context"] / service.spec["build"]["dockerfile"])
        argv = service.spec.get("entrypoint", image["entrypoint"]) + service.spec.get("command", image["command"])
        if argv[:1] != ["alertrouter"]:
            raise ComposeError(f"alertrouter's image runs {argv}, not the alertrouter command")
        env = {**image["env"], **self._environment(service)}
        if (env.get("ALERTROUTER_HOST"), env.get("ALERTROUTER_PORT")) != (
            "0.0.0.0",
            str(CONTAINER_PORTS["alertrouter"]),
        ):
            raise ComposeError("alertrouter no longer listens on 0.0.0.0:9095 in its container")
        env["ALERTROUTER_HOST"], env["ALERTROUTER_PORT"] = "127.0.0.1", str(service.port)
        for key, value in env.items():
            value = self.rewire(value, f"alertrouter: {key}")
            env[key] = str(service.path(value)) if value.startswith("/") else value
        env["ALERTROUTER_DATABASE_URL"] = self._database_url(env["ALERTROUTER_DATABASE_URL"])
        service.argv = [ALERTROUTER, *argv[1:]]
        service.env = env
        service.cwd = service.path(image["workdir"])
        service.cwd.mkdir(parents=True, exist_ok=True)

    def _database_url(self, url: str) -> str:
        """alertrouter's URL, on the `postgres` service's user, password and database, with the throwaway database."""
        parts = urlsplit(url)
        given = (parts.username, parts.password, parts.path.lstrip("/"))
        env = self.postgres_env
        if given != (env["POSTGRES_USER"], env["POSTGRES_PASSWORD"], env["POSTGRES_DB"]):
            raise ComposeError(
                "ALERTROUTER_DATABASE_URL does not use the postgres service's user, password and database"
            )
        host, port, database = self.postgres
        if (parts.hostname, parts.port) != (host, port):
            raise ComposeError(f"ALERTROUTER_DATABASE_URL points at {parts.hostname}:{parts.port}, not postgres")
        return urlunsplit(parts._replace(path=f"/{database}"))

    def _server_argv(self, service: Service) -> list[str]:
        """An image's program with compose's `command`, paths inside the root, listening on its loopback port."""
        program = IMAGE_PROGRAMS[service.spec["image"].split(":")[0]]
        if program is None:
            raise ComposeError(f"no program for {service.spec['image']} (bash .ci/setup installs it)")
        container_port = CONTAINER_PORTS[service.name]
        argv, listening = [program], False
        for arg in service.spec.get("command") or []:
            flag, eq, value = arg.partition("=")
            if flag == "--web.listen-address":
                if value != f":{container_port}":
                    raise ComposeError(f"{service.name} listens on {value}, not :{container_port}")
                value, listening = service.address, True
            elif value.startswith("/"):
                value = str(service.path(value))
            argv.append(f"{flag}{eq}{value}")
        if not listening:  # the image's default, :<container port>
            argv.append(f"--web.listen-address={service.address}")
        return argv

    def _lay_out_alertmanager(self) -> None:
        service = self.services["alertmanager"]
        gossip = free_port()
        service.argv = [
            *self._server_argv(service),
            f"--cluster.listen-address=127.0.0.1:{gossip}",
            f"--cluster.advertise-address=127.0.0.1:{gossip}",
        ]
        service.cwd = service.root

    def _lay_out_prometheus(self) -> None:
        service = self.services["prometheus"]
        service.argv = self._server_argv(service)
        service.cwd = service.root
        config_path = Path(next(arg.split("=", 1)[1] for arg in service.argv if arg.startswith("--config.file=")))
        config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
        for job in config["scrape_configs"]:
            targets = [target for group in job.get("static_configs") or [] for target in group["targets"]]
            if any(not target.startswith("127.0.0.1:") for target in targets):
                job["proxy_url"] = self.scrape_proxy  # hosts outside compose, reached as named
                self.proxied_jobs.append(job["job_name"])
        config_path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")

    # -- running -----------------------------------------------------------------------------------
    def start(self, timeout: float = 120.0) -> None:
        started: set[str] = set()
        while len(started) < len(self.services):
            ready = [
                name
                for name, service in self.services.items()
                if name not in started and set(service.spec.get("depends_on") or {}) <= started
            ]
            if not ready:
                raise ComposeError(f"depends_on cycle among {sorted(set(self.services) - started)}")
            for name in ready:
                self._start(self.services[name])
            for name in ready:
                self.wait_healthy(name, timeout)
                started.add(name)

    def _start(self, service: Service) -> None:
        if service.name == "postgres":
            return  # the local server, already running
        log = service.root / f"{service.name}.log"
        with log.open("ab") as out:
            popen = subprocess.Popen(
                service.argv, env=self._process_env(service), stdout=out, stderr=subprocess.STDOUT, cwd=service.cwd
            )
        service.proc = Proc(service.name, popen, service.url, log)

    def _process_env(self, service: Service) -> dict[str, str]:
        """The container's environment, and of the host's only what finds the program and its code."""
        base = {key: os.environ[key] for key in HOST_ENV if key in os.environ}
        return {**base, **service.env}

    def healthcheck(self, name: str) -> list[str]:
        """The service's compose healthcheck as a command run here, its own loopback address rewritten."""
        test = self.services[name].spec["healthcheck"]["test"]
        argv = ["sh", "-c", test[1]] if test[0] == "CMD-SHELL" else list(test[1:])
        programs: dict[str, Callable[[], str | None]] = {
            "python": lambda: sys.executable,
            "wget": lambda: shutil.which("wget"),
            "sh": lambda: shutil.which("sh"),
        }
        if argv[0] in programs:
            found = programs[argv[0]]()
            if found is None:
                raise ComposeError(f"{argv[0]} (the {name} healthcheck's program) is not installed")
            argv[0] = found
        own = f"127.0.0.1:{CONTAINER_PORTS[name]}"
        return [arg.replace(own, self.services[name].address) for arg in argv]

    def wait_healthy(self, name: str, timeout: float) -> None:
        """Poll the healthcheck until it passes (compose's `condition: service_healthy`), within `timeout`."""
        service = self.services[name]
        argv = self.healthcheck(name)
        host, port, _ = self.postgres
        env = {**os.environ, "PGHOST": host, "PGPORT": str(port)}  # the postgres container's own server
        deadline = time.monotonic() + timeout
        while True:
            if service.proc is not None and service.proc.popen.poll() is not None:
                raise ComposeError(f"{name} exited with {service.proc.popen.returncode}:\n{service.proc.logs()}")
            result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=30, check=False)
            if result.returncode == 0:
                return
            if time.monotonic() > deadline:
                logs = service.proc.logs() if service.proc else ""
                raise ComposeError(f"{name} unhealthy after {timeout:.0f}s: {argv}: {result.stderr}\n{logs}")
            time.sleep(0.5)

    def stop(self) -> None:
        for service in reversed(list(self.services.values())):
            if service.proc is not None:
                service.proc.stop()

    def log_tails(self, chars: int = 4000) -> str:
        return "\n".join(
            f"----- {s.name} (exit {s.proc.popen.poll()}) -----\n{s.proc.logs()[-chars:]}"
            for s in self.services.values()
            if s.proc is not None
        )
