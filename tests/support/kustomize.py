"""A kustomize build in Python, limited to what deploy/kubernetes uses, and accessors for the built objects.

tests/deploy holds `build` to what the real kustomize (`kubectl kustomize`) built of each overlay, kept as
digests in tests/deploy/kustomize-reference.json (written by `.venv/bin/python tests/support/kustomize.py`
where kubectl is installed: CI need not have it). It refuses any kustomization field or patch form it does
not implement.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import yaml

K8S = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes"
OVERLAYS = {"sqlite": K8S / "overlays" / "sqlite", "postgres": K8S / "overlays" / "postgres"}
CLUSTER_SCOPED = {"Namespace"}

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


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
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
        target = find(objects, document["kind"], document["metadata"]["name"])
        objects[objects.index(target)] = strategic_merge(target, document)
    for replicas in kustomization.get("replicas", []):
        find(objects, "Deployment", replicas["name"])["spec"]["replicas"] = replicas["count"]
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


class KubectlLoader(yaml.SafeLoader):
    """kustomize writes `matchType: =` unquoted, which YAML 1.1 reads as its `value` type: a plain string here."""


def _plain_string(loader: KubectlLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


KubectlLoader.add_constructor("tag:yaml.org,2002:value", _plain_string)


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


REFERENCE = Path(__file__).resolve().parents[1] / "deploy" / "kustomize-reference.json"


def fingerprint_of(objects: list[dict[str, Any]]) -> str:
    """A build's objects as a digest, keyed by kind and name, the generated ConfigMap's hash suffix left
    out (kustomize's hash function is its own): equal for equal builds, whatever the object order."""
    generated = rules_configmap(objects)["metadata"]["name"]
    text = json.dumps(objects).replace(generated, "alertrouter-rules-HASH")
    keyed = {f"{o['kind']}/{o['metadata']['name']}": o for o in json.loads(text)}
    return hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()


def write_reference() -> None:
    """What the real kustomize (`kubectl kustomize`, v5) builds of each overlay, as digests, into
    tests/deploy/kustomize-reference.json: run after changing deploy/kubernetes, where kubectl is
    installed (`.venv/bin/python tests/support/kustomize.py`). The tests hold `build` to it."""
    import subprocess

    digests = {}
    for name, path in sorted(OVERLAYS.items()):
        out = subprocess.run(["kubectl", "kustomize", str(path)], capture_output=True, text=True, check=True).stdout
        real = [doc for doc in yaml.load_all(out, Loader=KubectlLoader) if doc]
        digests[name] = fingerprint_of(real)
    REFERENCE.write_text(json.dumps(digests, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    write_reference()
