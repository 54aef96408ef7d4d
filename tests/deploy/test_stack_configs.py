"""Checks of the deployment stack that need no Docker engine: compose wiring, and the real amtool/promtool."""

from __future__ import annotations

import copy
import http.client
import http.server
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from alertrouter.durations import parse_duration
from alertrouter.ruleset import load_ruleset
from support.procs import free_port

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yml"
AM_CONFIG = REPO / "rules" / "deploy" / "alertmanager.yml"
PROM_CONFIG = REPO / "rules" / "deploy" / "prometheus.yml"
PROM_RULES_DIR = REPO / "rules" / "prometheus"
PROM_RULE_TESTS = PROM_RULES_DIR / "tests.yml"
NODE_RULE_FILES = ("gpu.rules.yml", "node.rules.yml")
RULE_FILES = (*NODE_RULE_FILES, "alertrouter.rules.yml", "watchdog.rules.yml")

STACK_SERVICES = ("alertrouter", "postgres", "alertmanager", "prometheus")
ALERTROUTER_ENV = [
    f"ALERTROUTER_{name}"
    for name in ("DATABASE_URL", "HOST", "PORT", "CONFIG", "BEARER_TOKEN", "BASIC_USERNAME", "BASIC_PASSWORD")
] + ["ALERTROUTER_LOG_LEVEL", "ALERTROUTER_LOG_FORMAT"]
GPU_ALERTS = ["GPUHighTemp", "GPUXidError", "GPUFallenOffBus", "GPUMemoryNearFull", "GPUHighUtilSustained"]
MORE_GPU_ALERTS = ["GPUPowerNearLimit", "GPUNVLinkBandwidthLow", "HAMiGPUMemoryNearFull"]
NODE_ALERTS = ["NodeDown", "NodeDiskPressure", "NodeMemoryPressure"]
SEVERITIES = {"critical", "warning", "info"}

# Environment variable names whose values are secrets.
SECRET_NAME = re.compile(r"PASSWORD|TOKEN|SECRET|PASSPHRASE|API_?KEY|CREDENTIAL", re.IGNORECASE)
# A compose interpolation: ${VAR}, ${VAR:?message}, ${VAR?message}, ${VAR:-default}, ${VAR-default}.
REFERENCE = re.compile(r"\$\{(?P<var>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?])(?P<arg>[^}]*))?\}")
# A default is tolerated only when it says it is for development.
DEV_DEFAULT = re.compile(r"dev|insecure|change-?me", re.IGNORECASE)
# scheme://user:password@host...; the password may itself be a ${...} reference.
URL_PASSWORD = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^:/@]*:(?P<password>.*)@[^@]*$")
# Aggregations drop the labels alertrouter derives the node from (instance, hostname, gpu).
AGGREGATION = re.compile(
    r"\b(sum|avg|min|max|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\s*(\(|by\b|without\b)"
)
# `group_left (labels) <operand>`: a join that only adds labels to the alerting series.
GROUP_LEFT = re.compile(r"group_left\s*\([^)]*\)\s*")
# Keys that would hold a credential inline in Alertmanager or Prometheus configs.
INLINE_CREDENTIAL_KEYS = {"credentials", "password", "bearer_token", "client_secret"}


# --- helpers -----------------------------------------------------------------------------------


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def dump_yaml(data: Any, path: Path) -> Path:
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def require_tool(name: str) -> str:
    """Path of a binary; skip without it, except in CI, where a skipped check would hide a failure."""
    found = shutil.which(name)
    if found is not None:
        return found
    reason = f"{name} not installed (apt-get install -y prometheus-alertmanager prometheus)"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}; CI must run these checks, not skip them")
    pytest.skip(reason)


def run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def output_of(result: subprocess.CompletedProcess[str]) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def environment_of(service: dict[str, Any]) -> dict[str, Any]:
    """A service's environment as a dict, from either the mapping or the KEY=VALUE list form."""
    env = service.get("environment") or {}
    if isinstance(env, dict):
        return dict(env)
    pairs = (item.split("=", 1) if "=" in item else (item, None) for item in env)
    return {key: value for key, value in pairs}


def bind_mounts(service: dict[str, Any]) -> list[tuple[str, str]]:
    """(host path, container path) of every bind mount; named volumes are left out."""
    mounts = []
    for volume in service.get("volumes") or []:
        if isinstance(volume, dict):
            if volume.get("type") == "bind":
                mounts.append((volume["source"], volume["target"]))
            continue
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/", "~")):
            mounts.append((source, target))
    return mounts


def command_flag(service: dict[str, Any], flag: str) -> str:
    for arg in service.get("command") or []:
        if arg.startswith(f"{flag}="):
            return str(arg.split("=", 1)[1])
    raise AssertionError(f"{flag} not set in the service command")


def _value_problem(where: str, value: Any) -> str | None:
    # Never echo the value: a failing test must not print the secret it found.
    if value is None:
        return None  # no value: passed through from the environment, or absent
    reference = REFERENCE.fullmatch(str(value))
    if reference is None:
        return f"{where}: literal value; use a ${{VAR}} reference"
    if reference["op"] in (":-", "-") and not DEV_DEFAULT.search(reference["arg"] or ""):
        return f"{where}: the default of ${{{reference['var']}}} is not marked as a development value"
    return None


def secret_problems(compose: dict[str, Any]) -> list[str]:
    """Secret-looking values that are neither a ${...} reference nor a default marked for development."""
    problems = []
    for name, service in (compose.get("services") or {}).items():
        values = dict(environment_of(service))
        build = service.get("build")
        if isinstance(build, dict):
            args = build.get("args") or {}
            values.update(args if isinstance(args, dict) else dict(arg.split("=", 1) for arg in args))
        for key, value in values.items():
            where = f"services.{name}.{key}"
            if SECRET_NAME.search(key):
                problems.append(_value_problem(where, value))
            url = URL_PASSWORD.match(str(value)) if isinstance(value, str) else None
            if url is not None:
                problems.append(_value_problem(f"{where} (URL password)", url["password"]))
    return [problem for problem in problems if problem is not None]


def inline_credentials(node: Any, path: str = "") -> list[str]:
    """Paths of keys in a config that hold a credential inline instead of in a file."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key in INLINE_CREDENTIAL_KEYS and value:
                found.append(f"{path}.{key}")
            found.extend(inline_credentials(value, f"{path}.{key}"))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found.extend(inline_credentials(item, f"{path}[{index}]"))
    return found


def all_rules(files: tuple[str, ...] = NODE_RULE_FILES) -> list[dict[str, Any]]:
    """The rules of the GPU and node rule files (alertrouter.rules.yml, about alertrouter itself, aggregates
    on purpose and is checked by tests/deploy/test_self_monitoring.py)."""
    rules = []
    for path in (PROM_RULES_DIR / name for name in files):
        for group in load_yaml(path)["groups"]:
            rules.extend(group["rules"])
    return rules


def prometheus_layout(tmp_path: Path) -> Path:
    """prometheus.yml and the rule files laid out as in the container (rules/ beside the config)."""
    shutil.copy(PROM_CONFIG, tmp_path / "prometheus.yml")
    shutil.copytree(PROM_RULES_DIR, tmp_path / "rules")
    return tmp_path / "prometheus.yml"


def load_mapping(path: Path) -> dict[str, Any]:
    data = load_yaml(path)
    assert isinstance(data, dict), f"{path} is not a YAML mapping"
    return data


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load_mapping(COMPOSE_FILE)


@pytest.fixture(scope="module")
def am_config() -> dict[str, Any]:
    return load_mapping(AM_CONFIG)


@pytest.fixture(scope="module")
def prom_config() -> dict[str, Any]:
    return load_mapping(PROM_CONFIG)


# --- (a) compose file, parsed --------------------------------------------------------------------


def test_compose_defines_the_whole_stack(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(STACK_SERVICES) <= set(services)
    assert services["postgres"]["image"].startswith("postgres:16")
    assert services["alertmanager"]["image"].startswith("prom/alertmanager")
    assert services["prometheus"]["image"].startswith("prom/prometheus")
    postgres = services["postgres"]
    assert "pg_isready" in " ".join(postgres["healthcheck"]["test"])
    named_volumes = [volume.split(":")[0] for volume in postgres["volumes"] if isinstance(volume, str)]
    assert set(named_volumes) & set(compose.get("volumes") or {}), "postgres data must live in a named volume"


def test_alertrouter_image_is_built_from_deploy_docker(compose: dict[str, Any]) -> None:
    build = compose["services"]["alertrouter"]["build"]
    assert build == {"context": ".", "dockerfile": "deploy/docker/Dockerfile"}
    # The repo's top level is fixed by the design: the image is defined under deploy/docker/ only
    # (tests/deploy/test_dockerfile.py checks the Dockerfile itself).
    assert not (REPO / "Dockerfile").exists()
    assert not (REPO / ".dockerignore").exists(), "deploy/docker/Dockerfile.dockerignore is the ignore file"


def test_every_variable_the_rules_reference_reaches_alertrouter(compose: dict[str, Any]) -> None:
    """A ${VAR} in the mounted rules/*.yml that compose does not pass into the container is always empty
    there: its channel would stay "unconfigured" whatever the operator puts in .env."""

    def strings(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            for value in node.values():
                yield from strings(value)
        elif isinstance(node, list):
            for item in node:
                yield from strings(item)
        elif isinstance(node, str):
            yield node

    referenced = {
        match["var"]
        for path in sorted((REPO / "rules").glob("*.yml"))  # comments are not read: only values count
        for text in strings(load_yaml(path))
        for match in REFERENCE.finditer(text)
    }
    assert referenced, "rules/*.yml reference no variable: this check reads them wrongly"
    passed = set(environment_of(compose["services"]["alertrouter"]))
    assert sorted(referenced - passed) == [], "add these to services.alertrouter.environment (no value: passed through)"


def test_alertrouter_service_wiring(compose: dict[str, Any]) -> None:
    service = compose["services"]["alertrouter"]
    env = environment_of(service)
    assert set(ALERTROUTER_ENV) <= set(env)
    # Substitute the references first: the `?` of `${VAR:?message}` would read as a query string.
    database = urlsplit(REFERENCE.sub("x", env["ALERTROUTER_DATABASE_URL"]))
    assert database.scheme == "postgresql+asyncpg"
    assert (database.hostname, database.port) == ("postgres", 5432)
    assert env["ALERTROUTER_LOG_FORMAT"] in {"text", "json"}
    # Inside the container alertrouter must listen on all interfaces to be reachable.
    assert env["ALERTROUTER_HOST"] == "0.0.0.0"
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    probe = " ".join(service["healthcheck"]["test"])
    assert f":{env['ALERTROUTER_PORT']}/readyz" in probe
    # ALERTROUTER_CONFIG must point at the mounted rules directory.
    assert ("./rules", env["ALERTROUTER_CONFIG"]) in bind_mounts(service)


@pytest.mark.parametrize("service_name", STACK_SERVICES)
def test_every_host_file_a_service_mounts_exists(compose: dict[str, Any], service_name: str) -> None:
    for source, _target in bind_mounts(compose["services"][service_name]):
        assert (REPO / source).exists(), f"{service_name} mounts {source}, which is not in the repo"


def test_prometheus_mounts_config_and_rules_where_rule_files_points(
    compose: dict[str, Any], prom_config: dict[str, Any]
) -> None:
    service = compose["services"]["prometheus"]
    config_path = PurePosixPath(command_flag(service, "--config.file"))
    mounts = bind_mounts(service)
    assert ("./rules/deploy/prometheus.yml", str(config_path)) in mounts
    mounted_rules = {PurePosixPath(target): source for source, target in mounts}
    for pattern in prom_config["rule_files"]:
        # Prometheus resolves relative rule_files against the config file's directory.
        in_container = config_path.parent / pattern if not pattern.startswith("/") else PurePosixPath(pattern)
        assert str(in_container) == "/etc/prometheus/rules/*.rules.yml"
        source = mounted_rules.get(in_container.parent)
        assert source == "./rules/prometheus", f"nothing mounted at {in_container.parent}"
        matched = {path.name for path in (REPO / source).glob(in_container.name)}
        assert matched == set(RULE_FILES), "the *tests.yml unit tests must not be loaded as rules"


def test_webhook_url_matches_the_alertrouter_service(compose: dict[str, Any], am_config: dict[str, Any]) -> None:
    urls = [hook["url"] for receiver in am_config["receivers"] for hook in receiver.get("webhook_configs", [])]
    assert len(urls) == 1
    url = urlsplit(urls[0])
    port = int(environment_of(compose["services"]["alertrouter"])["ALERTROUTER_PORT"])
    assert url.hostname == "alertrouter"
    assert url.hostname in compose["services"]
    assert url.port == port
    assert url.path == "/webhook/alertmanager"


def heartbeat_timeout(alertname: str) -> timedelta:
    """The timeout of the shipped heartbeat that the alert `alertname` refreshes."""
    (timeout,) = [h.timeout for h in load_ruleset(REPO / "rules", {}).heartbeats if h.matches({"alertname": alertname})]
    return timeout


def test_alertmanager_is_a_plain_catch_all_in_front_of_alertrouter(am_config: dict[str, Any]) -> None:
    route = am_config["route"]
    assert route["receiver"] == "alertrouter"
    # one catch-all route (alertrouter does the routing), and the Watchdog heartbeat re-sent every minute
    (watchdog,) = route["routes"]
    assert (watchdog["matchers"], watchdog["receiver"]) == (['alertname="Watchdog"'], "alertrouter")
    assert parse_duration(watchdog["repeat_interval"]) * 2 < heartbeat_timeout("Watchdog")
    assert "alertname" in route["group_by"]
    assert {"instance", "hostname", "Hostname"} <= set(route["group_by"])
    assert not am_config.get("inhibit_rules"), "alertrouter inhibits; Alertmanager must not"
    assert not am_config.get("time_intervals")
    assert not am_config.get("mute_time_intervals")
    (receiver,) = am_config["receivers"]
    (hook,) = receiver["webhook_configs"]
    assert hook["send_resolved"] is True
    assert hook["http_config"]["authorization"]["credentials_file"] == "/etc/alertmanager/alertrouter_token"


def test_alertmanager_gets_its_config_and_the_token_file_from_compose(
    compose: dict[str, Any], am_config: dict[str, Any]
) -> None:
    token_file = am_config["receivers"][0]["webhook_configs"][0]["http_config"]["authorization"]["credentials_file"]
    secrets = [
        secret
        for secret in compose["services"]["alertmanager"].get("secrets", [])
        if isinstance(secret, dict) and secret.get("target") == token_file
    ]
    assert len(secrets) == 1, f"no compose secret mounted at {token_file}"
    alertmanager = compose["services"]["alertmanager"]
    config_path = command_flag(alertmanager, "--config.file")
    assert ("./rules/deploy/alertmanager.yml", config_path) in bind_mounts(alertmanager)
    definition = compose["secrets"][secrets[0]["source"]]
    # The secret and alertrouter's own token come from the same variable, so they always agree.
    token_reference = REFERENCE.fullmatch(
        environment_of(compose["services"]["alertrouter"])["ALERTROUTER_BEARER_TOKEN"]
    )
    assert token_reference is not None
    assert definition == {"environment": token_reference["var"]}


def test_prometheus_targets_are_compose_services(compose: dict[str, Any], prom_config: dict[str, Any]) -> None:
    (alertmanagers,) = prom_config["alerting"]["alertmanagers"]
    assert alertmanagers["static_configs"][0]["targets"] == ["alertmanager:9093"]
    jobs = {job["job_name"]: job for job in prom_config["scrape_configs"]}
    port = environment_of(compose["services"]["alertrouter"])["ALERTROUTER_PORT"]
    assert jobs["alertrouter"]["static_configs"][0]["targets"] == [f"alertrouter:{port}"]
    assert jobs["alertrouter"].get("metrics_path", "/metrics") == "/metrics"
    assert jobs["alertmanager"]["static_configs"][0]["targets"] == ["alertmanager:9093"]
    # NodeDown matches up{job="node"}: the node-exporter job must keep that name.
    node_targets = [target for config in jobs["node"]["static_configs"] for target in config["targets"]]
    dcgm_targets = [target for config in jobs["dcgm"]["static_configs"] for target in config["targets"]]
    assert node_targets
    assert all(target.endswith(":9100") for target in node_targets)
    assert dcgm_targets
    assert all(target.endswith(":9400") for target in dcgm_targets)


def test_no_literal_secrets_in_compose(compose: dict[str, Any]) -> None:
    assert secret_problems(compose) == []


def test_no_inline_credentials_in_alertmanager_or_prometheus_config(
    am_config: dict[str, Any], prom_config: dict[str, Any]
) -> None:
    assert inline_credentials(am_config) == []
    assert inline_credentials(prom_config) == []


@pytest.mark.parametrize(
    ("environment", "expected"),
    [
        ({"ALERTROUTER_BEARER_TOKEN": "${ALERTROUTER_BEARER_TOKEN:?required}"}, []),
        ({"ALERTROUTER_BEARER_TOKEN": "${ALERTROUTER_BEARER_TOKEN:-dev-insecure-token}"}, []),
        ({"ALERTROUTER_BASIC_PASSWORD": None}, []),
        ({"ALERTROUTER_BEARER_TOKEN": "hunter2"}, ["literal value"]),
        ({"ALERTROUTER_BEARER_TOKEN": "${ALERTROUTER_BEARER_TOKEN:-hunter2}"}, ["not marked"]),
        ({"POSTGRES_PASSWORD": "prefix-${POSTGRES_PASSWORD}"}, ["literal value"]),
        ({"ALERTROUTER_DATABASE_URL": "postgresql+asyncpg://ar:hunter2@postgres:5432/db"}, ["literal"]),
        ({"ALERTROUTER_DATABASE_URL": "postgresql+asyncpg://ar:${PW:?set}@postgres:5432/db"}, []),
    ],
)
def test_secret_check_catches_literals(environment: dict[str, Any], expected: list[str]) -> None:
    problems = secret_problems({"services": {"app": {"environment": environment}}})
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert fragment in problem
        assert "hunter2" not in problem, "a problem report must not repeat the secret"


def test_every_required_alert_is_defined() -> None:
    names = {rule["alert"] for rule in all_rules()}
    assert {*GPU_ALERTS, *MORE_GPU_ALERTS, *NODE_ALERTS} <= names


@pytest.mark.parametrize("rule", all_rules(), ids=lambda rule: f"{rule['alert']}:{rule['labels']['severity']}")
def test_rule_has_severity_annotations_and_keeps_node_labels(rule: dict[str, Any]) -> None:
    assert rule["labels"]["severity"] in SEVERITIES
    assert rule["annotations"]["summary"].strip()
    assert rule["annotations"]["description"].strip()
    assert not AGGREGATION.search(alerting_side(rule["expr"])), "aggregation drops instance/hostname/gpu"


def alerting_side(expr: str) -> str:
    """`expr` without the info side of its `group_left` joins (`... group_left (nodename) topk by
    (instance) (1, ... node_uname_info ...)`): an aggregation there only picks the one info series
    whose labels are added, and the alerting series keep theirs. Any other joined side stays checked."""
    out, rest = "", expr
    while (found := GROUP_LEFT.search(rest)) is not None:
        out += rest[: found.start()]
        operand, rest = _operand(rest[found.end() :])
        assert "_info" in operand, f"only *_info metrics may be joined in: {operand}"
    return out + rest


def _operand(text: str) -> tuple[str, str]:
    """The operand at the start of `text` (a name, `by (...)`/`without (...)`, and a balanced
    parenthesised argument list), and what follows it."""
    head = re.match(r"\w+(\s*(by|without)\s*\([^)]*\))?\s*", text)
    end = head.end() if head else 0
    if end < len(text) and text[end] == "(":
        depth = 0
        for i in range(end, len(text)):
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            if depth == 0:
                return text[: i + 1], text[i + 1 :]
    return text[:end], text[end:]


@pytest.mark.parametrize(
    ("expr", "flagged"),
    [
        ('up{job="node"} == 0', False),
        ("(up == 0) * on (instance) group_left (nodename) topk by (instance) (1, max(node_uname_info))", False),
        ("sum by (instance) (up) == 0", True),  # the alerting side aggregates
        ("(up == 0) * on (instance) group_left (x) max by (instance) (up)", None),  # not an info metric
    ],
)
def test_only_info_joins_may_aggregate(expr: str, flagged: bool | None) -> None:
    if flagged is None:
        with pytest.raises(AssertionError, match="only \\*_info"):
            alerting_side(expr)
    else:
        assert bool(AGGREGATION.search(alerting_side(expr))) is flagged


# --- (b) the real tools --------------------------------------------------------------------------


def test_amtool_accepts_the_alertmanager_config() -> None:
    amtool = require_tool("amtool")
    result = run([amtool, "check-config", str(AM_CONFIG)])
    assert result.returncode == 0, output_of(result)
    assert "SUCCESS" in result.stdout


def _hook(config: dict[str, Any]) -> Any:
    return config["receivers"][0]["webhook_configs"][0]


@pytest.mark.parametrize(
    "breakage",
    [
        pytest.param(lambda config: config["route"].update(receiver="nobody-home"), id="undefined-receiver"),
        pytest.param(lambda config: config["route"].update(group_wait="ten seconds"), id="bad-duration"),
        pytest.param(lambda config: _hook(config).pop("url"), id="webhook-without-url"),
        pytest.param(
            lambda config: _hook(config)["http_config"]["authorization"].update(credentials="x"),
            id="token-inline-and-in-file",
        ),
    ],
)
def test_amtool_rejects_a_broken_copy(
    am_config: dict[str, Any], tmp_path: Path, breakage: Callable[[dict[str, Any]], None]
) -> None:
    amtool = require_tool("amtool")
    broken = copy.deepcopy(am_config)
    breakage(broken)
    result = run([amtool, "check-config", str(dump_yaml(broken, tmp_path / "alertmanager.yml"))])
    assert result.returncode != 0, output_of(result)


def test_promtool_accepts_the_prometheus_config_and_loads_the_rules(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    result = run([promtool, "check", "config", str(prometheus_layout(tmp_path))])
    assert result.returncode == 0, output_of(result)
    # The relative glob matched the rule files and promtool checked them through the config.
    assert "gpu.rules.yml" in result.stdout
    assert "node.rules.yml" in result.stdout
    assert "alertrouter.rules.yml" in result.stdout
    assert "tests.yml" not in result.stdout


def test_promtool_check_config_rejects_a_broken_rule_file(tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    config = prometheus_layout(tmp_path)
    rules = tmp_path / "rules" / "gpu.rules.yml"
    text = rules.read_text(encoding="utf-8")
    rules.write_text(text.replace("DCGM_FI_DEV_GPU_TEMP > 85", "DCGM_FI_DEV_GPU_TEMP >"), encoding="utf-8")
    result = run([promtool, "check", "config", str(config)])
    assert result.returncode != 0, output_of(result)


def test_promtool_rejects_a_broken_prometheus_config(prom_config: dict[str, Any], tmp_path: Path) -> None:
    promtool = require_tool("promtool")
    broken = copy.deepcopy(prom_config)
    broken["global"]["scrape_interval"] = "fast"
    result = run([promtool, "check", "config", str(dump_yaml(broken, tmp_path / "prometheus.yml"))])
    assert result.returncode != 0, output_of(result)


def test_promtool_accepts_the_rules() -> None:
    promtool = require_tool("promtool")
    rule_files = sorted(str(path) for path in PROM_RULES_DIR.glob("*.rules.yml"))
    assert len(rule_files) == len(RULE_FILES)
    result = run([promtool, "check", "rules", *rule_files])
    assert result.returncode == 0, output_of(result)


def test_promtool_rule_unit_tests_pass() -> None:
    promtool = require_tool("promtool")
    result = run([promtool, "test", "rules", PROM_RULE_TESTS.name], cwd=PROM_RULES_DIR)
    assert result.returncode == 0, output_of(result)
    assert "SUCCESS" in result.stdout


def test_promtool_rule_unit_tests_catch_a_changed_threshold(tmp_path: Path) -> None:
    """GPU 2 sits exactly at 85C in tests.yml: `>= 85` instead of `> 85` must fail the unit tests."""
    promtool = require_tool("promtool")
    shutil.copytree(PROM_RULES_DIR, tmp_path / "rules")
    rules = tmp_path / "rules" / "gpu.rules.yml"
    text = rules.read_text(encoding="utf-8")
    assert "DCGM_FI_DEV_GPU_TEMP > 85" in text
    rules.write_text(text.replace("DCGM_FI_DEV_GPU_TEMP > 85", "DCGM_FI_DEV_GPU_TEMP >=85"), encoding="utf-8")
    result = run([promtool, "test", "rules", PROM_RULE_TESTS.name], cwd=tmp_path / "rules")
    assert result.returncode != 0, output_of(result)


# --- (c) the real Alertmanager sends the token from the file -------------------------------------


Received = list[tuple[str, str | None, dict[str, Any]]]  # (path, Authorization header, JSON body)


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Webhook receiver that keeps every request it is sent."""

    received: Received

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.received.append((self.path, self.headers.get("Authorization"), json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def webhook_receiver() -> Iterator[tuple[int, Received]]:
    received: Received = []
    handler = type("Recorder", (_Recorder,), {"received": received})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], received
    finally:
        server.shutdown()
        server.server_close()


def _request(port: int, method: str, path: str, body: Any = None) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        payload = None if body is None else json.dumps(body)
        connection.request(method, path, body=payload, headers={"Content-Type": "application/json"})
        return connection.getresponse().status
    finally:
        connection.close()


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def _wait_for(predicate: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.2)
    return predicate()


@pytest.mark.alertmanager
@pytest.mark.e2e
def test_alertmanager_sends_the_bearer_token_from_the_file(
    am_config: dict[str, Any],
    tmp_path: Path,
    webhook_receiver: tuple[int, Received],
) -> None:
    """Our config, run by the real Alertmanager, with only the address, token path and timers changed."""
    binary = require_tool("prometheus-alertmanager")
    receiver_port, received = webhook_receiver
    token = "test-token-0123456789abcdef"
    (tmp_path / "alertrouter_token").write_text(token + "\n", encoding="utf-8")

    config = copy.deepcopy(am_config)
    hook = config["receivers"][0]["webhook_configs"][0]
    hook["url"] = hook["url"].replace("alertrouter:9095", f"127.0.0.1:{receiver_port}")
    hook["http_config"]["authorization"]["credentials_file"] = str(tmp_path / "alertrouter_token")
    config["route"].update(group_wait="1s", group_interval="1s")
    config_file = dump_yaml(config, tmp_path / "alertmanager.yml")

    am_port = free_port()
    log = (tmp_path / "alertmanager.log").open("w", encoding="utf-8")
    process = subprocess.Popen(
        [
            binary,
            f"--config.file={config_file}",
            f"--storage.path={tmp_path / 'data'}",
            f"--web.listen-address=127.0.0.1:{am_port}",
            "--cluster.listen-address=",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:

        def ready() -> bool:
            try:
                return _request(am_port, "GET", "/-/ready") == 200
            except OSError:
                return False

        assert _wait_for(ready, 20), f"Alertmanager did not become ready:\n{_tail(tmp_path / 'alertmanager.log')}"
        group = {"alertname": "NodeDown", "instance": "10.0.0.7:9100", "node": "10.0.0.7"}
        labels = {**group, "severity": "critical"}
        assert _request(am_port, "POST", "/api/v2/alerts", [{"labels": labels}]) == 200
        assert _wait_for(lambda: len(received) >= 1, 20), _tail(tmp_path / "alertmanager.log")

        path, authorization, payload = received[0]
        assert path == "/webhook/alertmanager"
        assert authorization == f"Bearer {token}"
        assert payload["version"] == "4"
        assert payload["status"] == "firing"
        assert payload["groupLabels"] == group, "grouped by alertname and the node labels, not severity"
        assert [alert["labels"] for alert in payload["alerts"]] == [labels]

        # send_resolved: ending the alert must produce a resolved notification too.
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        assert _request(am_port, "POST", "/api/v2/alerts", [{"labels": labels, "endsAt": now}]) == 200
        assert _wait_for(lambda: any(item[2]["status"] == "resolved" for item in received), 20)
        assert all(item[1] == f"Bearer {token}" for item in received)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
