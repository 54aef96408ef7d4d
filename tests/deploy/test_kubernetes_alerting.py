"""deploy/kubernetes, the alerting side: the PrometheusRules are generated from rules/prometheus (and CI fails
when they drift), promtool checks and unit-tests the groups they carry; the AlertmanagerConfig and the
kube-prometheus-stack values route everything to alertrouter and alertrouter's own alerts around it, as
the real Alertmanager (amtool) routes them.
"""

from __future__ import annotations

import copy
import importlib.util
import re
import shutil
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from support.kustomize import K8S, OVERLAYS, build, deployment_parts, env_of, selects, the
from support.procs import run_tool, tool

REPO = Path(__file__).resolve().parents[2]
PROM_RULES_DIR = REPO / "rules" / "prometheus"
VALUES = K8S / "alertmanager-values.yaml"


# --- one source of truth: generate.py -----------------------------------------------------------------


def _generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("k8s_generate", K8S / "generate.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generated_files_match_their_sources() -> None:
    assert _generate().drift() == [], "run: .venv/bin/python deploy/kubernetes/generate.py"


def test_drift_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    generate = _generate()
    rules, base = tmp_path / "rules", tmp_path / "deploy" / "kubernetes" / "base"
    shutil.copytree(REPO / "rules", rules, ignore=shutil.ignore_patterns("deploy"))
    for name, value in {
        "REPO": tmp_path,
        "RULES": rules,
        "PROMETHEUS_RULES": rules / "prometheus",
        "RULES_OUT": base / "rules",
        "PROMETHEUS_RULES_OUT": base / "prometheusrules",
        "DASHBOARD_OUT": base / "grafana" / "alertrouter.json",
    }.items():
        monkeypatch.setattr(generate, name, value)
    assert generate.drift()  # nothing generated yet
    generate.write()
    assert generate.drift() == []
    gpu = rules / "prometheus" / "gpu.rules.yml"
    gpu.write_text(gpu.read_text(encoding="utf-8").replace("> 85", "> 86"), encoding="utf-8")
    (rules / "new.yml").write_text("{}\n", encoding="utf-8")
    assert sorted(generate.drift()) == [
        "missing: deploy/kubernetes/base/rules/new.yml",
        "out of date: deploy/kubernetes/base/prometheusrules/gpu.yaml",
    ]
    (rules / "new.yml").unlink()
    assert generate.drift() == ["out of date: deploy/kubernetes/base/prometheusrules/gpu.yaml"]
    generate.write()
    (rules / "routes.yml").unlink()
    assert generate.drift() == ["no longer generated: deploy/kubernetes/base/rules/routes.yml"]


def test_prometheusrule_groups_are_the_rule_files(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    by_groups = {
        tuple(group["name"] for group in obj["spec"]["groups"]): obj["spec"]["groups"]
        for obj in objects
        if obj["kind"] == "PrometheusRule"
    }
    for path in PROM_RULES_DIR.glob("*.rules.yml"):
        groups = yaml.safe_load(path.read_text(encoding="utf-8"))["groups"]
        assert by_groups[tuple(group["name"] for group in groups)] == groups


def _extract_rule_files(objects: list[dict[str, Any]], directory: Path) -> list[Path]:
    """Each PrometheusRule's spec.groups as the rule file Prometheus would load."""
    files = []
    for obj in objects:
        if obj["kind"] == "PrometheusRule":
            # generate.py backwards: alertrouter-gpu-rules from gpu.rules.yml, alertrouter-rules from alertrouter.*
            name = obj["metadata"]["name"].removesuffix("-rules")
            name = name if name == "alertrouter" else name.removeprefix("alertrouter-")
            path = directory / f"{name}.rules.yml"
            path.write_text(yaml.safe_dump({"groups": obj["spec"]["groups"]}, sort_keys=False), encoding="utf-8")
            files.append(path)
    return files


def test_promtool_checks_the_groups_of_the_prometheusrules(tmp_path: Path) -> None:
    promtool = tool("promtool", "prometheus")
    files = _extract_rule_files(build(OVERLAYS["postgres"]), tmp_path)
    assert len(files) == len(list(PROM_RULES_DIR.glob("*.rules.yml")))
    result = run_tool([promtool, "check", "rules", *map(str, files)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(files)


def test_promtool_unit_tests_pass_on_the_prometheusrules(tmp_path: Path) -> None:
    """The rule unit tests of rules/prometheus, run against the rules as the PrometheusRules carry them."""
    promtool = tool("promtool", "prometheus")
    names = {path.name for path in _extract_rule_files(build(OVERLAYS["postgres"]), tmp_path)}
    assert names == {path.name for path in PROM_RULES_DIR.glob("*.rules.yml")}
    tests = sorted(PROM_RULES_DIR.glob("*tests.yml"))
    assert len(tests) >= 2
    for test in tests:
        shutil.copy(test, tmp_path / test.name)
    result = run_tool([promtool, "test", "rules", *(test.name for test in tests)], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_broken_extracted_group(tmp_path: Path) -> None:
    promtool = tool("promtool", "prometheus")
    objects = copy.deepcopy(build(OVERLAYS["postgres"]))
    rule = next(obj for obj in objects if obj["kind"] == "PrometheusRule")["spec"]["groups"][0]["rules"][0]
    rule["expr"] = "sum(rate(x[5m]) >"
    result = run_tool([promtool, "check", "rules", *map(str, _extract_rule_files(objects, tmp_path))])
    assert result.returncode != 0


# --- Alertmanager: everything to alertrouter, alertrouter's own alerts also around it ---------------


def test_alertmanagerconfig_sends_everything_to_the_service_with_the_token(
    overlay: tuple[str, list[dict[str, Any]]],
) -> None:
    _, objects = overlay
    config = the(objects, "AlertmanagerConfig")["spec"]
    service = the(objects, "Service")
    _, _, container = deployment_parts(objects)
    receivers = {receiver["name"]: receiver for receiver in config["receivers"]}
    (hook,) = receivers[config["route"]["receiver"]]["webhookConfigs"]
    url = urlsplit(hook["url"])
    assert url.hostname == f"{service['metadata']['name']}.{service['metadata']['namespace']}.svc"
    assert url.port == service["spec"]["ports"][0]["port"]
    assert url.path == "/webhook/alertmanager"
    assert hook["sendResolved"] is True
    assert hook["maxAlerts"] == 0
    token = env_of(container)["ALERTROUTER_BEARER_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert hook["httpConfig"]["authorization"] == {"type": "Bearer", "credentials": token}
    # Routes: the Watchdog heartbeat to alertrouter every minute, the self-alerts to a receiver that is
    # not alertrouter (continue), then a catch-all.
    watchdog, self_route, catch_all = config["route"]["routes"]
    assert watchdog["matchers"] == [{"name": "alertname", "value": "Watchdog", "matchType": "="}]
    assert (watchdog["receiver"], watchdog["repeatInterval"]) == (config["route"]["receiver"], "1m")
    assert self_route["matchers"] == [{"name": "component", "value": "alertrouter", "matchType": "="}]
    assert self_route["continue"] is True
    assert self_route["receiver"] != config["route"]["receiver"]
    assert "webhookConfigs" not in receivers[self_route["receiver"]]
    assert catch_all == {"receiver": config["route"]["receiver"]}


_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(name: str) -> str:
    return {"requireTLS": "require_tls"}.get(name, _SNAKE.sub("_", name).lower())


def _as_alertmanager_yml(spec: dict[str, Any], secrets: Path) -> dict[str, Any]:
    """An AlertmanagerConfig spec in alertmanager.yml form, as the operator renders it with the matcher
    strategy None (no namespace matcher): camelCase keys in snake_case, matchers as strings, Secret
    references as files under `secrets`."""

    def route(node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "matchers":
                out["matchers"] = [f'{m["name"]}{m.get("matchType", "=")}"{m["value"]}"' for m in value]
            elif key == "routes":
                out["routes"] = [route(child) for child in value]
            else:
                out[_snake(key)] = value
        return out

    def secret_file(reference: dict[str, str]) -> str:
        path = secrets / reference["name"] / reference["key"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("s3cret-from-the-secret\n", encoding="utf-8")
        return str(path)

    def config(node: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "authPassword":
                out["auth_password_file"] = secret_file(value)
            elif key == "httpConfig":
                authorization = value["authorization"]
                out["http_config"] = {
                    "authorization": {
                        "type": authorization["type"],
                        "credentials_file": secret_file(authorization["credentials"]),
                    }
                }
            else:
                out[_snake(key)] = value
        return out

    receivers = []
    for receiver in spec["receivers"]:
        converted: dict[str, Any] = {"name": receiver["name"]}
        for key, configs in receiver.items():
            if key != "name":
                converted[_snake(key)] = [config(item) for item in configs]
        receivers.append(converted)
    return {"route": route(spec["route"]), "receivers": receivers}


@pytest.mark.parametrize(
    ("labels", "receivers"),
    [
        (["alertname=AlertrouterDown", "component=alertrouter"], "alertrouter-fallback,alertrouter"),
        (["alertname=GPUXidError", "component=gpu", "node=10.0.0.7"], "alertrouter"),
        (["alertname=NodeDown", "node=10.0.0.7"], "alertrouter"),
    ],
)
def test_the_alertmanagerconfig_routes_as_documented(tmp_path: Path, labels: list[str], receivers: str) -> None:
    """The AlertmanagerConfig's routing tree, run through the real Alertmanager's config loader and router."""
    amtool = tool("amtool", "prometheus-alertmanager")
    spec = the(build(OVERLAYS["postgres"]), "AlertmanagerConfig")["spec"]
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(_as_alertmanager_yml(spec, tmp_path / "secrets")), encoding="utf-8")
    check = run_tool([amtool, "check-config", str(path)])
    assert check.returncode == 0, check.stdout + check.stderr
    result = run_tool([amtool, "config", "routes", "test", f"--config.file={path}", *labels])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receivers


def test_every_self_alert_carries_the_label_the_fallback_route_matches() -> None:
    rules = yaml.safe_load((PROM_RULES_DIR / "alertrouter.rules.yml").read_text(encoding="utf-8"))
    for group in rules["groups"]:
        for rule in group["rules"]:
            assert rule["labels"]["component"] == "alertrouter", rule["alert"]


def _values_config(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    values = yaml.safe_load(VALUES.read_text(encoding="utf-8"))
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(values["alertmanager"]["config"]), encoding="utf-8")
    return values, path


def test_the_values_snippet_is_a_valid_alertmanager_config(tmp_path: Path) -> None:
    amtool = tool("amtool", "prometheus-alertmanager")
    values, path = _values_config(tmp_path)
    result = run_tool([amtool, "check-config", str(path)])
    assert result.returncode == 0, result.stdout + result.stderr
    spec = values["alertmanager"]["alertmanagerSpec"]
    assert spec["alertmanagerConfigMatcherStrategy"] == {"type": "None"}
    objects = build(OVERLAYS["postgres"])
    labels = the(objects, "AlertmanagerConfig")["metadata"]["labels"]
    assert selects(spec["alertmanagerConfigSelector"], labels)
    hook = next(r for r in values["alertmanager"]["config"]["receivers"] if r["name"] == "alertrouter")
    (webhook,) = hook["webhook_configs"]
    assert webhook["url"] == the(objects, "AlertmanagerConfig")["spec"]["receivers"][0]["webhookConfigs"][0]["url"]
    secret_dir = PurePosixPath("/etc/alertmanager/secrets") / spec["secrets"][0]
    assert PurePosixPath(webhook["http_config"]["authorization"]["credentials_file"]).parent == secret_dir


@pytest.mark.parametrize(
    ("labels", "receivers"),
    [
        (
            ["alertname=AlertrouterDown", "component=alertrouter", "severity=critical"],
            "alertrouter-fallback,alertrouter",
        ),
        (["alertname=GPUHighTemp", "severity=critical", "node=10.0.0.7"], "alertrouter"),
        (["alertname=Watchdog", "severity=none"], "deadmans-switch,alertrouter"),  # and alertrouter's heartbeat
    ],
)
def test_the_values_snippet_routes_as_documented(tmp_path: Path, labels: list[str], receivers: str) -> None:
    """The real Alertmanager routing tree: alertrouter's own alerts reach a human without alertrouter."""
    amtool = tool("amtool", "prometheus-alertmanager")
    _, path = _values_config(tmp_path)
    result = run_tool([amtool, "config", "routes", "test", f"--config.file={path}", *labels])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receivers


def test_a_broken_values_snippet_is_rejected(tmp_path: Path) -> None:
    amtool = tool("amtool", "prometheus-alertmanager")
    values, path = _values_config(tmp_path)
    config = values["alertmanager"]["config"]
    config["route"]["routes"][1]["receiver"] = "nobody"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert run_tool([amtool, "check-config", str(path)]).returncode != 0
