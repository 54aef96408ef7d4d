"""Poison alerts for the engine-side fuzz (issue 44): a real exporter's alert, as Alertmanager sends it,
with ONE hostile value at a seeded-random label value, label name or annotation.

The hostile values extend the ingest fuzz's (`tests/ingest/test_fuzz.py`) and the renderers'
(`support.hostile.NASTY`) with what reaches the engine's columns: lengths either side of each
`varchar` the engine writes a label into (`incidents.severity` 32, `node_aliases.address` 64, names
255, incident keys 512, the ingest limit of 4,096), IPv6 instances with zone ids, and the spellings of
`critical` a templating slip produces. `FIXED` are the cases issue 44 found, never left to chance."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from support.hostile import NASTY
from support.scenario import (
    dcgm_labels,
    k8s_dcgm_labels,
    k8s_node_down_labels,
    kube_node_not_ready_labels,
    node_exporter_down_labels,
)

__all__ = [
    "ENGINE_VALUES",
    "FIXED",
    "HOSTILE_NAMES",
    "HOSTILE_VALUES",
    "Poison",
    "draw",
    "long_zone",
    "normal_labels",
    "shown",
]


@dataclass(frozen=True)
class Poison:
    """One alert to send: `where` says what is hostile in it (for a failure message)."""

    title: str
    labels: dict[str, Any]
    annotations: dict[str, Any] = field(default_factory=dict)
    where: str = ""
    value: Any = None


def long_zone(port: int, length: int = 60) -> str:
    """An IPv6 link-local `instance` whose zone id makes the address longer than 64 characters."""
    return f"[fe80::1%{'enp' + 'z' * (length - 3)}]:{port}"


def _edge(stem: str, length: int) -> str:
    return (stem * (length // len(stem) + 1))[:length]


# Label values aimed at the engine and the store: strings Alertmanager passes on as they are, then JSON
# values that are not strings. Drawn more often than the renderers' `NASTY` (also in `HOSTILE_VALUES`).
ENGINE_VALUES: list[Any] = [
    "",
    "²",
    "٣",
    "①",
    "\u0000",
    "\ud7ff",
    "\u2028",
    "x" * 300,
    "2026-11-21T08:14:03",
    "007",
    # lengths either side of the columns a label reaches
    *(_edge("critical", n) for n in (32, 33, 64, 65, 200, 255, 256, 511, 512, 513)),
    "v" * 4095,
    "v" * 4096,
    "节" * 4096,
    "v" * 4097,
    # what a templating slip makes of a severity
    "CRITICAL",
    "critical ",
    "critical\n",
    "crit\u0000ical",
    "critical\u202e",
    "critical: GPU double-bit ECC errors above threshold",
    "{{ $labels.severity }}",
    # instances: IPv6 with and without zone ids, odd ports, addresses where names go
    "[fe80::1%eth0]:9100",
    "[fe80::1%25en0]:9100",
    long_zone(9100),
    long_zone(9400, 200),
    "fe80::1%" + "z" * 4000,
    "[fe80::1%" + "节" * 40 + "]:9400",
    "[::1]:9100",
    "[::ffff:10.0.0.7]:9100",
    "[2001:db8::7]:9400",
    "[2001:db8::7]",
    "2001:db8:0:0:0:0:0:7",
    "10.0.0.7:9100:9100",
    "10.0.0.7",
    "0.0.0.0:0",
    "999.1.1.1:9100",
    "gpu-node-07:99999",
    # numbers and other JSON that is not a string
    None,
    True,
    0,
    -1,
    2**63,
    1.5e308,
    [],
    {},
    [1, 2],
]
HOSTILE_VALUES: list[Any] = [*ENGINE_VALUES, *NASTY]

HOSTILE_NAMES: list[str] = [
    "",
    " ",
    "0gpu",
    "gpu index",
    "gpu-index",
    "__name__",
    "__meta_kubernetes_node_name",
    "Severity",
    "SEVERITY",
    "severity\u0000",
    "节点",
    "\u202egpu",
    "\r\nnode",
    "l" * 256,
    "l" * 257,
]

# The labels the issue names, the ones the engine reads (severity, node names, instance), weighted over the rest.
FOCUS = ["severity", "instance", "node", "Hostname", "gpu", "UUID", "alertname", "job"]
ANNOTATIONS = ["summary", "description", "runbook_url"]


def _notes(labels: dict[str, str]) -> dict[str, str]:
    where = labels.get("Hostname") or labels.get("node") or labels.get("instance", "")
    return {
        "summary": f"{labels['alertname']} on {where}",
        "description": f"{labels['alertname']} has fired on {where} for 5 minutes.",
    }


def _exporters(i: int) -> list[Callable[[], dict[str, str]]]:
    """The exporters' label sets of case `i`: a node and addresses of its own, so each poison alert has
    a fingerprint of its own whichever one label the poison replaces."""
    host, ip, pod_ip = f"gpu-node-{i:04d}", f"10.20.{i // 250}.{i % 250 + 1}", f"10.244.{i // 250}.{i % 250 + 1}"
    gpu = i % 8
    return [
        lambda: dcgm_labels(ip, host, gpu),
        lambda: dcgm_labels(ip, host, gpu, alertname="GPUHighTemp", severity="warning", region="north"),
        lambda: node_exporter_down_labels(ip, node=host),  # node-exporter with a `node` target label
        lambda: k8s_dcgm_labels(host, pod_ip, gpu, severity="critical"),
        lambda: k8s_node_down_labels(host, ip),
        lambda: kube_node_not_ready_labels(host),
    ]


def draw(rng: random.Random, i: int) -> Poison:
    """Case `i`: an exporter's alert with one hostile value at a random label value, label name (a new
    label, or one renamed), annotation value or annotation name."""
    labels: dict[str, Any] = dict(rng.choice(_exporters(i))())
    notes: dict[str, Any] = _notes(labels)
    base = f"{labels['alertname']} ({labels['job']})"
    kind = rng.choices(["value", "name", "annotation", "annotation name"], weights=[6, 2, 1, 1])[0]
    value: Any = rng.choice(ENGINE_VALUES if rng.random() < 0.7 else NASTY)
    if kind == "value":
        name = rng.choice(FOCUS) if rng.random() < 0.7 else rng.choice(sorted(labels))
        labels[name] = value  # added where the exporter has none (`node` on bare metal)
        return Poison(f"{base}: label {name}", labels, notes, f"labels.{name}", value)
    if kind == "name":
        value = rng.choice(HOSTILE_NAMES)
        if rng.random() < 0.5:
            old = rng.choice(FOCUS if rng.random() < 0.7 else sorted(labels))
            labels[value] = labels.pop(old, "gpu-node-x")
            return Poison(f"{base}: label {old} renamed", labels, notes, f"label name for {old}", value)
        labels[value] = "1"
        return Poison(f"{base}: a new label", labels, notes, "label name", value)
    if kind == "annotation":
        name = rng.choice(ANNOTATIONS)
        notes[name] = value
        return Poison(f"{base}: annotation {name}", labels, notes, f"annotations.{name}", value)
    value = rng.choice(HOSTILE_NAMES)
    notes[value] = "see the runbook"
    return Poison(f"{base}: annotation name", labels, notes, "annotation name", value)


def _fixed() -> list[Poison]:
    severity = "critical: GPU double-bit ECC errors above threshold"  # 52 characters, incidents.severity 32
    dcgm = dcgm_labels("10.20.200.1", "gpu-node-9001", 3) | {"severity": severity}
    node = node_exporter_down_labels("10.20.200.2", node="gpu-node-9002") | {"instance": long_zone(9100)}
    hostname = dcgm_labels("10.20.200.3", "gpu-node-9003", 5) | {"instance": long_zone(9400)}
    return [
        Poison("severity of 52 characters", dcgm, _notes(dcgm), "labels.severity", severity),
        Poison("IPv6 instance, 60-character zone, node label", node, _notes(node), "labels.instance", long_zone(9100)),
        Poison(
            "IPv6 instance, 60-character zone, Hostname", hostname, _notes(hostname), "labels.instance", long_zone(9400)
        ),
    ]


# Issue 44's findings: on PostgreSQL each made every later engine pass fail.
FIXED = _fixed()


def normal_labels(i: int) -> dict[str, str]:
    """The critical alert sent after case `i`: a dcgm-exporter XID error on a node of its own."""
    return dcgm_labels(f"10.50.{i // 250}.{i % 250 + 1}", f"gpu-h100-{i:04d}", i % 8, region="north")


def shown(value: Any, most: int = 80) -> str:
    """A hostile value as a failure message quotes it: its repr, cut, with its length when cut."""
    text = repr(value)
    return text if len(text) <= most else f"{text[:most]}… ({len(value) if isinstance(value, str) else '?'} chars)"
