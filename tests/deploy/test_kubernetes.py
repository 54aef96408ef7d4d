"""deploy/kubernetes without a cluster: the overlays built as kustomize builds them (support/kustomize.py,
checked against `kubectl kustomize`), every object validated against the Kubernetes API schemas
(kubernetes-validate) or, for the prometheus-operator's CRDs, against the fields their CRDs define; the
objects fit together, and the pod is what alertrouter needs. The rules and Alertmanager side:
test_kubernetes_alerting.py.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any, cast

import jsonschema  # type: ignore[import-untyped]  # types-jsonschema is not a dependency
import pytest
import yaml

from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings
from support.kustomize import (
    K8S,
    OVERLAYS,
    REFERENCE,
    build,
    deployment_parts,
    env_of,
    find,
    fingerprint_of,
    rules_configmap,
    selects,
    the,
)
from support.need import need

REPO = Path(__file__).resolve().parents[2]
PROM_RULES_DIR = REPO / "rules" / "prometheus"
VALUES = K8S / "alertmanager-values.yaml"
SECRET_EXAMPLE = K8S / "secret.example.env"
KUBERNETES_VERSION = "1.30"  # oldest minor still supported upstream when this was written
SECRET = "alertrouter-env"
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "AlertmanagerConfig"}


@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_the_build_is_what_kubectl_kustomize_builds(name: str) -> None:
    """The reference for `build`: what kustomize itself (v5 in kubectl) built of the overlay, as a digest
    (tests/deploy/kustomize-reference.json). After a change to deploy/kubernetes, write it again with
    `.venv/bin/python tests/support/kustomize.py` where kubectl is installed: a build that differs from
    kustomize's then fails here."""
    reference = json.loads(REFERENCE.read_text())
    assert fingerprint_of(build(OVERLAYS[name])) == reference[name], (
        "the Python build differs from what `kubectl kustomize` built: run tests/support/kustomize.py"
    )


# --- the prometheus-operator CRDs' fields, as far as our manifests use them ---------------------------
# Written from prometheus-operator's example/prometheus-operator-crd/monitoring.coreos.com_*.yaml (main,
# Aug 2026): ServiceMonitor and PrometheusRule v1, AlertmanagerConfig v1alpha1. Fields the CRDs define
# but our manifests do not use are left out, so an unknown field here is a typo or needs a look at the CRD.

DURATION = {
    "type": "string",
    "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$",
}
STRING = {"type": "string"}
BOOLEAN = {"type": "boolean"}
STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}


def closed(required: list[str] | None = None, /, **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required or [], "additionalProperties": False}


def array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


SECRET_KEY = closed(["key"], name=STRING, key=STRING, optional=BOOLEAN)
METADATA = {
    "type": "object",
    "required": ["name"],
    "properties": {"name": STRING, "namespace": STRING, "labels": STRING_MAP, "annotations": STRING_MAP},
}
LABEL_SELECTOR = closed(
    matchLabels=STRING_MAP,
    matchExpressions=array(closed(["key", "operator"], key=STRING, operator=STRING, values=array(STRING))),
)


def crd_object(api_version: str, kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return closed(
        ["apiVersion", "kind", "metadata", "spec"],
        apiVersion={"const": api_version},
        kind={"const": kind},
        metadata=METADATA,
        spec=spec,
    )


RULE = closed(
    ["expr"],
    alert=STRING,
    record=STRING,
    expr={"type": ["string", "integer"]},
    labels=STRING_MAP,
    annotations=STRING_MAP,
    keep_firing_for=DURATION,
    **{"for": DURATION},
)
PROMETHEUS_RULE = crd_object(
    "monitoring.coreos.com/v1",
    "PrometheusRule",
    closed(
        groups=array(
            closed(
                ["name"],
                name=STRING,
                interval=DURATION,
                query_offset=DURATION,
                limit={"type": "integer"},
                labels=STRING_MAP,
                partial_response_strategy={"type": "string", "pattern": "^(?i)(abort|warn)?$"},
                rules=array(RULE),
            )
        )
    ),
)
SERVICE_MONITOR = crd_object(
    "monitoring.coreos.com/v1",
    "ServiceMonitor",
    closed(
        ["endpoints", "selector"],
        selector=LABEL_SELECTOR,
        namespaceSelector=closed(any=BOOLEAN, matchNames=array(STRING)),
        jobLabel=STRING,
        targetLabels=array(STRING),
        podTargetLabels=array(STRING),
        endpoints=array(
            closed(
                port=STRING,
                targetPort={"type": ["string", "integer"]},
                path=STRING,
                scheme={"enum": ["http", "https", "HTTP", "HTTPS"]},
                interval=DURATION,
                scrapeTimeout=DURATION,
                honorLabels=BOOLEAN,
                authorization=closed(type=STRING, credentials=SECRET_KEY),
                relabelings=array({"type": "object"}),
                metricRelabelings=array({"type": "object"}),
            )
        ),
    ),
)
HTTP_CONFIG = closed(
    authorization=closed(type=STRING, credentials=SECRET_KEY),
    bearerTokenSecret=SECRET_KEY,
    followRedirects=BOOLEAN,
    proxyUrl={"type": "string", "pattern": "^(http|https|socks5)://.+$"},
)
ALERTMANAGER_CONFIG = crd_object(
    "monitoring.coreos.com/v1alpha1",
    "AlertmanagerConfig",
    {
        "$defs": {
            "route": closed(
                receiver=STRING,
                groupBy=array(STRING),
                groupWait=DURATION,
                groupInterval=DURATION,
                repeatInterval=DURATION,
                matchers=array(
                    closed(
                        ["name"], name=STRING, value=STRING, regex=BOOLEAN, matchType={"enum": ["!=", "=", "=~", "!~"]}
                    )
                ),
                routes=array({"$ref": "#/properties/spec/$defs/route"}),
                muteTimeIntervals=array(STRING),
                activeTimeIntervals=array(STRING),
                **{"continue": BOOLEAN},
            )
        },
        **closed(
            route={"$ref": "#/properties/spec/$defs/route"},
            receivers=array(
                closed(
                    ["name"],
                    name=STRING,
                    webhookConfigs=array(
                        closed(
                            url=STRING,
                            urlSecret=SECRET_KEY,
                            sendResolved=BOOLEAN,
                            maxAlerts={"type": "integer", "minimum": 0},
                            timeout=DURATION,
                            httpConfig=HTTP_CONFIG,
                        )
                    ),
                    emailConfigs=array(
                        closed(
                            to=STRING,
                            smarthost=STRING,
                            authUsername=STRING,
                            authPassword=SECRET_KEY,
                            authSecret=SECRET_KEY,
                            authIdentity=STRING,
                            hello=STRING,
                            requireTLS=BOOLEAN,
                            sendResolved=BOOLEAN,
                            html=STRING,
                            text=STRING,
                            **{"from": STRING},
                        )
                    ),
                )
            ),
            inhibitRules=array({"type": "object"}),
        ),
    },
)
CRD_SCHEMAS = {
    "PrometheusRule": PROMETHEUS_RULE,
    "ServiceMonitor": SERVICE_MONITOR,
    "AlertmanagerConfig": ALERTMANAGER_CONFIG,
}


def crd_problems(obj: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(CRD_SCHEMAS[obj["kind"]])
    return [f"{'.'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(obj)]


def kubernetes_problems(obj: dict[str, Any]) -> list[str]:
    kubernetes_validate = _kubernetes_validate()
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        return [str(error).splitlines()[0]]
    return []


def _kubernetes_validate() -> ModuleType:
    try:
        import kubernetes_validate  # type: ignore[import-untyped]  # untyped dev dependency: `need` reports it missing
    except ImportError:
        need(False, "kubernetes-validate not installed (pip install -e '.[dev]')")
        raise
    return cast(ModuleType, kubernetes_validate)


# --- every object is valid ----------------------------------------------------------------------------


def test_the_overlays_hold_what_issue_16_asks_for(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    name, objects = overlay
    kinds = sorted(obj["kind"] for obj in objects)
    expected = {"Namespace", "ServiceAccount", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"}
    expected |= {"ConfigMap", "ServiceMonitor", "AlertmanagerConfig", "PrometheusRule"}
    assert expected <= set(kinds)
    assert kinds.count("PrometheusRule") == len(list(PROM_RULES_DIR.glob("*.rules.yml")))
    assert ("PersistentVolumeClaim" in kinds) == (name == "sqlite")
    assert len({(obj["kind"], obj["metadata"]["name"]) for obj in objects}) == len(objects), "duplicate objects"


def test_every_core_object_is_valid_kubernetes(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    problems = {
        f"{obj['kind']}/{obj['metadata']['name']}": kubernetes_problems(obj)
        for obj in objects
        if obj["kind"] not in CRD_KINDS
    }
    assert {where: found for where, found in problems.items() if found} == {}


def test_every_crd_object_has_only_known_fields(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    problems = {
        f"{obj['kind']}/{obj['metadata']['name']}": crd_problems(obj) for obj in objects if obj["kind"] in CRD_KINDS
    }
    assert len(problems) >= 3
    assert {where: found for where, found in problems.items() if found} == {}


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[last] = value

    return change


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("Deployment", _set("spec.template.spec.containers.0.securityContext.readOnlyRootFileSystem", True)),
        ("Deployment", _set("spec.template.spec.containers.0.ports.0.containerPort", "http")),
        ("Service", _set("spec.ports.0.protocl", "TCP")),
        ("PodDisruptionBudget", _set("spec.minAvailable", [1])),
    ],
    ids=["typo-in-field-name", "port-not-a-number", "unknown-service-field", "pdb-wrong-type"],
)
def test_the_kubernetes_validation_catches_a_broken_copy(kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    broken = copy.deepcopy(the(build(OVERLAYS["postgres"]), kind))
    change(broken)
    assert kubernetes_problems(broken)


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        ("ServiceMonitor", _set("spec.endpoints.0.intervall", "30s")),
        ("ServiceMonitor", _set("spec.endpoints.0.interval", "30 seconds")),
        ("AlertmanagerConfig", _set("spec.receivers.0.webhookConfigs.0.sendResolve", True)),
        ("AlertmanagerConfig", _set("spec.route.routes.0.matchers.0.matchType", "==")),
        ("AlertmanagerConfig", _set("spec.receivers.0.webhookConfigs.0.httpConfig.authorization.credentials", "x")),
        ("PrometheusRule", _set("spec.groups.0.rules.0.for", "five minutes")),
        ("PrometheusRule", _set("spec.groups.0.rules.0.annotation", {})),
    ],
)
def test_the_crd_schemas_catch_a_broken_copy(kind: str, change: Callable[[dict[str, Any]], None]) -> None:
    broken = copy.deepcopy(next(obj for obj in build(OVERLAYS["postgres"]) if obj["kind"] == kind))
    change(broken)
    assert crd_problems(broken)


# --- the objects fit together -------------------------------------------------------------------------


def test_selectors_ports_and_references_resolve(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    deployment, pod, container = deployment_parts(objects)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert selects(deployment["spec"]["selector"], pod_labels)
    service = the(objects, "Service")
    assert selects({"matchLabels": service["spec"]["selector"]}, pod_labels)
    assert selects(the(objects, "PodDisruptionBudget")["spec"]["selector"], pod_labels)
    assert selects(the(objects, "NetworkPolicy")["spec"]["podSelector"], pod_labels)
    container_ports = {port["name"]: port["containerPort"] for port in container["ports"]}
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] in container_ports
    for rule in the(objects, "NetworkPolicy")["spec"]["ingress"]:
        assert all(port["port"] in container_ports for port in rule["ports"])
    monitor = the(objects, "ServiceMonitor")
    assert selects(monitor["spec"]["selector"], service["metadata"]["labels"])
    assert [endpoint["port"] for endpoint in monitor["spec"]["endpoints"]] == [service_port["name"]]
    assert monitor["spec"]["endpoints"][0]["path"] == "/metrics"
    assert find(objects, "ServiceAccount", pod["serviceAccountName"])
    names = {(obj["kind"], obj["metadata"]["name"]) for obj in objects}
    for volume in pod["volumes"]:
        if "configMap" in volume:
            assert ("ConfigMap", volume["configMap"]["name"]) in names
        if "persistentVolumeClaim" in volume:
            assert ("PersistentVolumeClaim", volume["persistentVolumeClaim"]["claimName"]) in names
    namespaces = {obj["metadata"].get("namespace") for obj in objects if obj["kind"] != "Namespace"}
    assert namespaces == {the(objects, "Namespace")["metadata"]["name"]}


def test_the_prometheus_operator_selects_the_monitor_and_rules(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    """kube-prometheus-stack selects ServiceMonitors and PrometheusRules by its release label."""
    _, objects = overlay
    for obj in objects:
        if obj["kind"] in {"ServiceMonitor", "PrometheusRule"}:
            assert obj["metadata"]["labels"]["release"] == "kube-prometheus-stack", obj["metadata"]["name"]


def test_the_pod_is_locked_down(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    _, pod, container = deployment_parts(objects)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["automountServiceAccountToken"] is False
    security = container["securityContext"]
    assert security["readOnlyRootFilesystem"] is True
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"]["drop"] == ["ALL"]
    assert {"requests", "limits"} <= set(container["resources"])
    assert "memory" in container["resources"]["limits"]
    # What must be writable is a volume: /tmp (tempfile, matplotlib's cache) and, on SQLite, the database.
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    mounts = {mount["mountPath"]: volumes[mount["name"]] for mount in container["volumeMounts"]}
    assert "emptyDir" in mounts["/tmp"]
    assert env_of(container)["MPLCONFIGDIR"]["value"].startswith("/tmp/")


def test_probes_use_healthz_and_readyz(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    _, _, container = deployment_parts(objects)
    ports = {port["name"] for port in container["ports"]}
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz", "a database outage must not restart pods"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
        assert container[probe]["httpGet"]["port"] in ports
    listen = env_of(container)
    assert listen["ALERTROUTER_HOST"]["value"] == "0.0.0.0"
    assert int(listen["ALERTROUTER_PORT"]["value"]) == container["ports"][0]["containerPort"]


def test_environment_names_are_real_settings(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    """Every ALERTROUTER_* variable the manifests set is a field of alertrouter.settings.Settings."""
    _, objects = overlay
    _, _, container = deployment_parts(objects)
    settings = {f"ALERTROUTER_{field.upper()}" for field in Settings.model_fields}
    assert {name for name in env_of(container) if name.startswith("ALERTROUTER_")} <= settings
    example = _example_secret_keys()
    assert {key for key in example if key.startswith("ALERTROUTER_") and key not in rule_variables()} <= settings


def test_the_literal_environment_is_valid_settings(
    overlay: tuple[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The values the manifests set parse as alertrouter's settings (with a token, as the Secret gives)."""
    _, objects = overlay
    _, _, container = deployment_parts(objects)
    for name in list(os.environ):
        if name.startswith("ALERTROUTER_"):
            monkeypatch.delenv(name)
    for name, item in env_of(container).items():
        if "value" in item:
            monkeypatch.setenv(name, item["value"])
    monkeypatch.setenv("ALERTROUTER_BEARER_TOKEN", "x" * 32)
    settings = Settings()
    assert settings.listen_host() == ("0.0.0.0", None)
    assert str(settings.config) == "/etc/alertrouter/rules"
    if "ALERTROUTER_DATABASE_URL" in env_of(container) and "value" in env_of(container)["ALERTROUTER_DATABASE_URL"]:
        assert settings.database_url == "sqlite+aiosqlite:////var/lib/alertrouter/alertrouter.db"


def test_the_pod_runs_as_the_images_user(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    """runAsUser/runAsGroup are the numeric USER of the image docker-compose.yml builds (deploy/docker/Dockerfile),
    and the container's args reach `alertrouter` through the image's ENTRYPOINT."""
    _, objects = overlay
    _, pod, container = deployment_parts(objects)
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    dockerfile = (REPO / compose["services"]["alertrouter"]["build"]["dockerfile"]).read_text(encoding="utf-8")
    users = re.findall(r"^USER\s+(\d+):(\d+)\s*$", dockerfile, re.MULTILINE)
    assert users, "the image's final USER is no longer numeric uid:gid"
    uid, gid = users[-1]
    assert (pod["securityContext"]["runAsUser"], pod["securityContext"]["runAsGroup"]) == (int(uid), int(gid))
    assert re.search(r'^ENTRYPOINT \["alertrouter"\]$', dockerfile, re.MULTILINE)
    assert container["args"][:1] == ["serve"]


def test_secrets_come_from_the_secret_never_from_a_literal(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    _, _, container = deployment_parts(objects)
    env = env_of(container)
    token = env["ALERTROUTER_BEARER_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert token == {"name": SECRET, "key": "ALERTROUTER_BEARER_TOKEN"}, "required: never `optional: true`"
    assert container["envFrom"] == [{"secretRef": {"name": SECRET}}]
    for name, item in env.items():
        if re.search(r"TOKEN|PASSWORD|SECRET|_KEY", name) or "postgresql" in str(item.get("value", "")):
            assert "value" not in item, f"{name} must come from the Secret"
    assert not any(obj["kind"] == "Secret" for obj in objects), "the Secret is created by the user, not shipped"


def test_sqlite_overlay_is_one_replica_on_a_volume() -> None:
    objects = build(OVERLAYS["sqlite"])
    deployment, pod, container = deployment_parts(objects)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}, "two pods must never write one SQLite file"
    url = env_of(container)["ALERTROUTER_DATABASE_URL"]["value"]
    assert url.startswith("sqlite:////")
    database_dir = PurePosixPath(url.removeprefix("sqlite:///")).parent
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    (mount,) = [m for m in container["volumeMounts"] if PurePosixPath(m["mountPath"]) == database_dir]
    claim = volumes[mount["name"]]["persistentVolumeClaim"]["claimName"]
    assert find(objects, "PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteOnce"]
    assert not mount.get("readOnly")
    # One replica: a PDB demanding one available would block every node drain.
    assert "minAvailable" not in the(objects, "PodDisruptionBudget")["spec"]


def test_postgres_overlay_is_several_replicas_that_survive_a_drain() -> None:
    objects = build(OVERLAYS["postgres"])
    deployment, pod, container = deployment_parts(objects)
    assert deployment["spec"]["replicas"] >= 2
    assert deployment["spec"]["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    assert 1 <= the(objects, "PodDisruptionBudget")["spec"]["minAvailable"] < deployment["spec"]["replicas"]
    url = env_of(container)["ALERTROUTER_DATABASE_URL"]["valueFrom"]["secretKeyRef"]
    assert url == {"name": SECRET, "key": "ALERTROUTER_DATABASE_URL"}
    assert not any(obj["kind"] == "PersistentVolumeClaim" for obj in objects)
    assert pod["topologySpreadConstraints"][0]["topologyKey"] == "kubernetes.io/hostname"


def test_the_rules_configmap_is_rules_dir_and_loads(overlay: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    _, objects = overlay
    _, pod, container = deployment_parts(objects)
    configmap = rules_configmap(objects)
    sources = {path.name: path.read_text(encoding="utf-8") for path in (REPO / "rules").glob("*.yml")}
    assert configmap["data"] == sources
    volume = next(v for v in pod["volumes"] if v.get("configMap", {}).get("name") == configmap["metadata"]["name"])
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert env_of(container)["ALERTROUTER_CONFIG"]["value"] == mount["mountPath"]
    for name, text in configmap["data"].items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert load_ruleset(tmp_path, {}).channels


def test_a_changed_rule_renames_the_configmap(tmp_path: Path) -> None:
    """What rolls the pods when a rule changes: the generated name follows the content, and so does the
    Deployment's reference to it."""
    copied = tmp_path / "kubernetes"
    shutil.copytree(K8S, copied)
    before = rules_configmap(build(copied / "overlays" / "postgres", root=copied))["metadata"]["name"]
    rules = copied / "base" / "rules" / "routes.yml"
    rules.write_text(rules.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    objects = build(copied / "overlays" / "postgres", root=copied)
    after = rules_configmap(objects)["metadata"]["name"]
    assert before != after
    _, pod, _ = deployment_parts(objects)
    assert {"name": after} == next(v["configMap"] for v in pod["volumes"] if "configMap" in v)


def test_the_dashboard_configmap_is_for_grafanas_sidecar(overlay: tuple[str, list[dict[str, Any]]]) -> None:
    _, objects = overlay
    dashboard = find(objects, "ConfigMap", "alertrouter-dashboard")
    assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert dashboard["data"] == {"alertrouter.json": (REPO / "deploy" / "grafana" / "alertrouter.json").read_text()}


def test_the_configmap_generator_lists_every_rule_file() -> None:
    kustomization = yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text(encoding="utf-8"))
    (generator,) = [g for g in kustomization["configMapGenerator"] if g["name"] == "alertrouter-rules"]
    assert sorted(generator["files"]) == sorted(f"rules/{path.name}" for path in (REPO / "rules").glob("*.yml"))


# --- the Secret's keys ----------------------------------------------------------------------------------

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}")


def rule_variables() -> set[str]:
    """The ${VAR}s rules/*.yml use outside comments."""
    found = set()
    for path in (REPO / "rules").glob("*.yml"):
        for line in path.read_text(encoding="utf-8").splitlines():
            found.update(_VARIABLE.findall(line.split("#", 1)[0]))
    return found


def _example_secret_keys() -> list[str]:
    lines = SECRET_EXAMPLE.read_text(encoding="utf-8").splitlines()
    return [line.split("=", 1)[0] for line in lines if line.strip() and not line.startswith("#")]


def test_the_example_secret_lists_every_key_the_manifests_and_rules_read(
    overlay: tuple[str, list[dict[str, Any]]],
) -> None:
    _, objects = overlay
    keys = _example_secret_keys()
    assert len(keys) == len(set(keys))
    lines = [line for line in SECRET_EXAMPLE.read_text(encoding="utf-8").splitlines() if not line.startswith("#")]
    assert all(line.endswith("=") for line in lines if line.strip()), "an example holds no secret values"
    referenced = set(re.findall(rf"'name': '{SECRET}', 'key': '([A-Z0-9_]+)'", str(objects)))
    assert referenced >= {"ALERTROUTER_BEARER_TOKEN", "SMTP_PASSWORD"}
    assert referenced <= set(keys)
    assert rule_variables() <= set(keys)
