"""deploy/kubernetes without a cluster: the overlays built as kustomize would build them, every object
validated against the Kubernetes API schemas (kubernetes-validate) or, for the prometheus-operator's
CRDs, against the fields their CRDs define; the rules checked by promtool, the Alertmanager side by amtool.

`kustomize` (and `kubectl kustomize`) are not installed here, so `build` below implements the part of
kustomize these kustomizations use, and refuses any kustomization field or patch form it does not implement.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

import jsonschema
import pytest
import yaml

from alertrouter.ruleset import load_ruleset
from alertrouter.settings import Settings
from support.need import need

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "kubernetes"
OVERLAYS = {"sqlite": K8S / "overlays" / "sqlite", "postgres": K8S / "overlays" / "postgres"}
PROM_RULES_DIR = REPO / "rules" / "prometheus"
VALUES = K8S / "alertmanager-values.yaml"
SECRET_EXAMPLE = K8S / "secret.example.env"
KUBERNETES_VERSION = "1.30"  # oldest minor still supported upstream when this was written
SECRET = "alertrouter-env"
CLUSTER_SCOPED = {"Namespace"}
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "AlertmanagerConfig"}


# --- a kustomize build, limited to what deploy/kubernetes uses -----------------------------------------

KUSTOMIZATION_FIELDS = {
    "apiVersion",
    "kind",
    "namespace",
    "resources",
    "configMapGenerator",
    "images",
    "replicas",
    "patches",
}
# Strategic merge patch: the merge key of each list the patches touch (Kubernetes' patchMergeKey).
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
}


def _documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


def strategic_merge(base: Any, patch: Any, key: str | None = None) -> Any:
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for name, value in patch.items():
            assert not name.startswith("$"), f"patch directive {name} not supported by this build"
            if value is None:
                merged.pop(name, None)
            else:
                merged[name] = strategic_merge(merged[name], value, name) if name in merged else value
        return merged
    if isinstance(base, list) and isinstance(patch, list) and key in MERGE_KEYS:
        merge_key = MERGE_KEYS[key]
        merged_list = list(base)
        added = []
        for item in patch:
            at = next((i for i, old in enumerate(merged_list) if old.get(merge_key) == item.get(merge_key)), None)
            if at is None:
                added.append(item)
            else:
                merged_list[at] = strategic_merge(merged_list[at], item)
        return added + merged_list  # kustomize puts the patch's new items first
    return patch


def _find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    found = [obj for obj in objects if obj["kind"] == kind and obj["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def _containers(obj: dict[str, Any]) -> list[dict[str, Any]]:
    pod = obj.get("spec", {}).get("template", {}).get("spec", {})
    return [*pod.get("initContainers", []), *pod.get("containers", [])]


def build(directory: Path, root: Path = K8S) -> list[dict[str, Any]]:
    """The objects `kubectl apply -k directory` would send (generated names get a hash suffix, not
    kustomize's own hash, but like it one that changes with the content)."""
    kustomization = yaml.safe_load((directory / "kustomization.yaml").read_text(encoding="utf-8"))
    unknown = set(kustomization) - KUSTOMIZATION_FIELDS
    assert not unknown, f"{directory}: kustomization fields {unknown} not implemented by this test's build"
    objects: list[dict[str, Any]] = []
    for resource in kustomization.get("resources", []):
        path = (directory / resource).resolve()
        assert path.is_relative_to(root), f"{resource}: outside deploy/kubernetes"
        objects.extend(build(path, root) if path.is_dir() else _documents(path))
    renamed: dict[str, str] = {}
    for generator in kustomization.get("configMapGenerator", []):
        assert set(generator) <= {"name", "files", "options"}, generator
        options = generator.get("options", {})
        assert set(options) <= {"labels", "disableNameSuffixHash"}, options
        data = {}
        for file in generator["files"]:
            path = (directory / file).resolve()
            assert path.is_relative_to(directory), f"{file}: kustomize refuses files outside {directory}"
            data[path.name] = path.read_text(encoding="utf-8")
        digest = hashlib.sha256(yaml.safe_dump(data, sort_keys=True).encode()).hexdigest()[:10]
        if not options.get("disableNameSuffixHash"):
            renamed[generator["name"]] = f"{generator['name']}-{digest}"
        meta: dict[str, Any] = {"name": renamed.get(generator["name"], generator["name"])}
        if "labels" in options:
            meta["labels"] = options["labels"]
        objects.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data})
    for patch in kustomization.get("patches", []):
        assert set(patch) == {"path"}, f"only `patches: - path:` is implemented: {patch}"
        (document,) = _documents(directory / patch["path"])
        target = _find(objects, document["kind"], document["metadata"]["name"])
        objects[objects.index(target)] = strategic_merge(target, document)
    for replicas in kustomization.get("replicas", []):
        _find(objects, "Deployment", replicas["name"])["spec"]["replicas"] = replicas["count"]
    for obj in objects:
        for container in _containers(obj):
            for image in kustomization.get("images", []):
                if container["image"].split(":")[0] == image["name"]:
                    container["image"] = f"{image.get('newName', image['name'])}:{image['newTag']}"
        for volume in obj.get("spec", {}).get("template", {}).get("spec", {}).get("volumes", []):
            if "configMap" in volume and volume["configMap"]["name"] in renamed:
                volume["configMap"]["name"] = renamed[volume["configMap"]["name"]]
        if "namespace" in kustomization and obj["kind"] not in CLUSTER_SCOPED:
            obj["metadata"]["namespace"] = kustomization["namespace"]
    return objects


@pytest.fixture(scope="module", params=sorted(OVERLAYS))
def overlay(request: pytest.FixtureRequest) -> tuple[str, list[dict[str, Any]]]:
    return request.param, build(OVERLAYS[request.param])


class _KubectlLoader(yaml.SafeLoader):
    """kustomize writes `matchType: =` unquoted, which YAML 1.1 reads as its `value` type: a plain string here."""


_KubectlLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


@pytest.mark.parametrize("name", sorted(OVERLAYS))
def test_the_build_is_what_kubectl_kustomize_builds(name: str) -> None:
    """The reference for `build`: kustomize itself (v5 in kubectl), where it is installed. Only the hash
    suffix of the generated ConfigMap's name differs."""
    kubectl = shutil.which("kubectl")
    need(kubectl is not None, "kubectl not installed: cannot compare with the real kustomize")
    assert kubectl is not None
    result = _run([kubectl, "kustomize", str(OVERLAYS[name])])
    assert result.returncode == 0, result.stderr
    real = [doc for doc in yaml.load_all(result.stdout, Loader=_KubectlLoader) if doc]
    mine = build(OVERLAYS[name])

    def normalized(objects: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
        generated = rules_configmap(objects)["metadata"]["name"]
        text = json.dumps(objects).replace(generated, "alertrouter-rules-HASH")
        return {(obj["kind"], obj["metadata"]["name"]): obj for obj in json.loads(text)}

    assert normalized(mine) == normalized(real)


def the(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    (found,) = [obj for obj in objects if obj["kind"] == kind]
    return found


def rules_configmap(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (found,) = [
        o for o in objects if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("alertrouter-rules-")
    ]
    return found


def deployment_parts(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    deployment = the(objects, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    return deployment, pod, container


def env_of(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["name"]: item for item in container.get("env", [])}


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector (matchLabels and matchExpressions In/NotIn/Exists/DoesNotExist) matching labels."""
    if any(labels.get(key) != value for key, value in selector.get("matchLabels", {}).items()):
        return False
    for expression in selector.get("matchExpressions", []):
        key, operator, values = expression["key"], expression["operator"], expression.get("values", [])
        ok = {
            "In": key in labels and labels[key] in values,
            "NotIn": labels.get(key) not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not ok:
            return False
    return True


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


def closed(required: list[str] | None = None, **properties: Any) -> dict[str, Any]:
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
        import kubernetes_validate  # a dev dependency: `need` reports it missing
    except ImportError:
        need(False, "kubernetes-validate not installed (pip install -e '.[dev]')")
        raise
    return kubernetes_validate


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
    assert _find(objects, "ServiceAccount", pod["serviceAccountName"])
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
    """runAsUser is the user docker-compose.yml's image build creates (scope 2 may move it to a Dockerfile)."""
    _, objects = overlay
    _, pod, _ = deployment_parts(objects)
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    build_file = compose["services"]["alertrouter"]["build"].get("dockerfile_inline")
    if build_file is None:
        build_file = (REPO / compose["services"]["alertrouter"]["build"].get("dockerfile", "Dockerfile")).read_text()
    uid = re.search(r"--uid\s+(\d+)", build_file)
    assert uid is not None, "the image's user id is no longer visible in its build"
    assert pod["securityContext"]["runAsUser"] == int(uid[1])


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
    assert _find(objects, "PersistentVolumeClaim", claim)["spec"]["accessModes"] == ["ReadWriteOnce"]
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
    dashboard = _find(objects, "ConfigMap", "alertrouter-dashboard")
    assert dashboard["metadata"]["labels"] == {"grafana_dashboard": "1"}
    assert dashboard["data"] == {"alertrouter.json": (REPO / "deploy" / "grafana" / "alertrouter.json").read_text()}


def test_the_configmap_generator_lists_every_rule_file() -> None:
    kustomization = yaml.safe_load((K8S / "base" / "kustomization.yaml").read_text(encoding="utf-8"))
    (generator,) = [g for g in kustomization["configMapGenerator"] if g["name"] == "alertrouter-rules"]
    assert sorted(generator["files"]) == sorted(f"rules/{path.name}" for path in (REPO / "rules").glob("*.yml"))


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


def _promtool() -> str:
    found = shutil.which("promtool")
    need(found is not None, "promtool not installed (apt-get install -y prometheus)")
    assert found is not None
    return found


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_promtool_checks_the_groups_of_the_prometheusrules(tmp_path: Path) -> None:
    promtool = _promtool()
    files = _extract_rule_files(build(OVERLAYS["postgres"]), tmp_path)
    assert len(files) == len(list(PROM_RULES_DIR.glob("*.rules.yml")))
    result = _run([promtool, "check", "rules", *map(str, files)])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == len(files)


def test_promtool_unit_tests_pass_on_the_prometheusrules(tmp_path: Path) -> None:
    """The rule unit tests of rules/prometheus, run against the rules as the PrometheusRules carry them."""
    promtool = _promtool()
    names = {path.name for path in _extract_rule_files(build(OVERLAYS["postgres"]), tmp_path)}
    assert names == {path.name for path in PROM_RULES_DIR.glob("*.rules.yml")}
    tests = sorted(PROM_RULES_DIR.glob("*tests.yml"))
    assert len(tests) >= 2
    for test in tests:
        shutil.copy(test, tmp_path / test.name)
    result = _run([promtool, "test", "rules", *(test.name for test in tests)], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_rejects_a_broken_extracted_group(tmp_path: Path) -> None:
    promtool = _promtool()
    objects = copy.deepcopy(build(OVERLAYS["postgres"]))
    rule = next(obj for obj in objects if obj["kind"] == "PrometheusRule")["spec"]["groups"][0]["rules"][0]
    rule["expr"] = "sum(rate(x[5m]) >"
    result = _run([promtool, "check", "rules", *map(str, _extract_rule_files(objects, tmp_path))])
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
    # Routes: the self-alerts to a receiver that is not alertrouter (continue), then a catch-all.
    self_route, catch_all = config["route"]["routes"]
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
    amtool = _amtool()
    spec = the(build(OVERLAYS["postgres"]), "AlertmanagerConfig")["spec"]
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump(_as_alertmanager_yml(spec, tmp_path / "secrets")), encoding="utf-8")
    check = _run([amtool, "check-config", str(path)])
    assert check.returncode == 0, check.stdout + check.stderr
    result = _run([amtool, "config", "routes", "test", f"--config.file={path}", *labels])
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


def _amtool() -> str:
    found = shutil.which("amtool")
    need(found is not None, "amtool not installed (apt-get install -y prometheus-alertmanager)")
    assert found is not None
    return found


def test_the_values_snippet_is_a_valid_alertmanager_config(tmp_path: Path) -> None:
    amtool = _amtool()
    values, path = _values_config(tmp_path)
    result = _run([amtool, "check-config", str(path)])
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
        (["alertname=Watchdog", "severity=none"], "deadmans-switch"),
    ],
)
def test_the_values_snippet_routes_as_documented(tmp_path: Path, labels: list[str], receivers: str) -> None:
    """The real Alertmanager routing tree: alertrouter's own alerts reach a human without alertrouter."""
    amtool = _amtool()
    _, path = _values_config(tmp_path)
    result = _run([amtool, "config", "routes", "test", f"--config.file={path}", *labels])
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == receivers


def test_a_broken_values_snippet_is_rejected(tmp_path: Path) -> None:
    amtool = _amtool()
    values, path = _values_config(tmp_path)
    config = values["alertmanager"]["config"]
    config["route"]["routes"][1]["receiver"] = "nobody"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    assert _run([amtool, "check-config", str(path)]).returncode != 0


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
