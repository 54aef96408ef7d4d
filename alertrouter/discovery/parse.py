"""Pure reading of Prometheus answers: the label sets of an instant query, and what each series says
about which address (or pod) is which node and which topology labels a node has. No I/O.

The series (label names checked against kube-state-metrics' and node-exporter's documentation):
- `node_uname_info{instance="10.0.0.7:9100", nodename="gpu-node-07"}` (node-exporter): the scraped
  address is the node whose kernel host name is `nodename`.
- `kube_node_info{node, internal_ip}` (kube-state-metrics): the node's InternalIP.
- `kube_pod_info{pod, pod_ip, host_ip, node, host_network, ...}` (kube-state-metrics): the host IP is
  the node's; the pod IP and the pod's name are that node's too (a dcgm-exporter scraped by pod IP,
  whose `Hostname` is its pod's name under older GPU Operator charts). A host-network pod's IP is the
  host IP: it is taken as the node's address, never as a pod's.
- `kube_node_labels{node, label_topology_kubernetes_io_zone, ...}` (kube-state-metrics, labels as
  allowed by `--metric-labels-allowlist=nodes=[...]`): topology labels through a configurable map.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import msgspec

from alertrouter.model import NAME_MAX
from alertrouter.pipeline.nodes import lookup_key

__all__ = ["RANKS", "BadAnswer", "Claim", "claims_of", "decode_vector", "query_of", "topology_of", "vector"]

# When two series claim one key for different nodes, the lower rank wins: Kubernetes' own name for a
# node (which dcgm-exporter's NODE_NAME and kube-state-metrics' alerts use) over the kernel's host
# name, a node's address over a pod's. Within one rank the newer claim wins, then the smaller name.
RANKS = {
    "kube_node_info": 0,  # internal_ip
    "kube_pod_info/host_ip": 1,
    "node_uname_info": 2,
    "kube_pod_info/pod_ip": 3,
    "kube_pod_info/pod": 4,
}


class BadAnswer(ValueError):
    """The answer is not what Prometheus's query API returns for an instant vector query."""


class Claim(NamedTuple):
    """One series says `key` (an address, a host name or a pod's name) is node `node`.

    A tuple: a big cluster's `kube_pod_info` states some 300,000 of them every refresh, and a
    dataclass's hashing and ordering run in Python (sorting them took 2 s), a tuple's in C."""

    key: str
    node: str
    source: str  # a key of RANKS

    @property
    def rank(self) -> int:
        return RANKS[self.source]


# The labels each series is read for; `kube_node_labels` is read for `node` and the configured names.
_READS = {
    "node_uname_info": ("instance", "nodename"),
    "kube_node_info": ("node", "internal_ip"),
    "kube_pod_info": ("node", "host_ip", "pod_ip", "host_network", "pod"),
}


def query_of(series: str, node_labels: Mapping[str, Sequence[str]]) -> str:
    """The instant query that reads `series`: its series counted by the labels read of them, so that
    Prometheus answers with those labels alone, one series per distinct set (a big cluster's
    `kube_pod_info` carries a dozen more per pod: its answer was three times the size, and parsing it
    holds the interpreter throughout). The names are fixed here or checked as label names by the config."""
    if series == "kube_node_labels":
        names = list(dict.fromkeys(["node", *(n for listed in node_labels.values() for n in listed)]))
    else:
        names = list(_READS[series])
    return f"count by ({', '.join(names)}) ({series})"


class _Sample(msgspec.Struct, gc=False):
    metric: dict[str, str]  # its value is not read: not decoded


class _Vector(msgspec.Struct, gc=False):
    resultType: str
    result: list[_Sample]


class _Answer(msgspec.Struct, gc=False):
    status: str
    data: _Vector


_ANSWER = msgspec.json.Decoder(_Answer)


def decode_vector(content: bytes) -> list[dict[str, str]] | None:
    """The label sets of a well-formed success answer to an instant vector query, decoded at once in C
    into objects the garbage collector does not track (a label set of strings is not; the samples' values
    are skipped); None for anything else, which `vector` (over a plain parse) says what is wrong with.

    A big cluster's `kube_pod_info` is 100,000 series and more every refresh: parsed into plain JSON
    objects, they were twice as many tracked containers, and the collections they set off held the
    interpreter (the event loop with it) for long stretches at a time."""
    try:
        answer = _ANSWER.decode(content)
    except (msgspec.DecodeError, UnicodeDecodeError):  # not JSON (nor UTF-8), or not that shape
        return None
    if answer.status != "success" or answer.data.resultType != "vector":
        return None
    return [sample.metric for sample in answer.data.result]


def vector(body: Any) -> list[dict[str, str]]:
    """The label sets of `GET /api/v1/query`'s JSON answer: `{"status": "success", "data": {"resultType":
    "vector", "result": [{"metric": {...}, "value": [ts, "1"]}]}}`. An error answer or any other shape
    raises BadAnswer saying what was wrong (never the whole body: it may be large or not ours)."""
    if not isinstance(body, dict):
        raise BadAnswer(f"answer is a JSON {type(body).__name__}, not an object")
    status = body.get("status")
    if status == "error":
        raise BadAnswer(f"query failed: {str(body.get('errorType', ''))[:100]}: {str(body.get('error', ''))[:300]}")
    if status != "success":
        raise BadAnswer(f"answer status is {str(status)[:50]!r}, not 'success'")
    data = body.get("data")
    if not isinstance(data, dict):
        raise BadAnswer("answer has no data object")
    if data.get("resultType") != "vector":
        raise BadAnswer(f"result type is {str(data.get('resultType'))[:50]!r}, not 'vector'")
    result = data.get("result")
    if not isinstance(result, list):
        raise BadAnswer("answer has no result list")
    out = []
    for i, item in enumerate(result):
        metric = item.get("metric") if isinstance(item, dict) else None
        if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
            raise BadAnswer(f"result[{i}] has no metric object of string labels")
        out.append({str(k): v for k, v in metric.items()})
    return out


# An IPv4 address as `ipaddress` writes it (no leading zeros, ASCII digits): taken as it is. Parsing it
# with `ipaddress` was most of the cost of reading a big cluster's `kube_pod_info` (an address per pod).
_IPV4 = re.compile(
    r"(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}"
)


def _ip(value: str) -> str | None:
    """`value` as `ipaddress` writes the address it is, or None when it is not one."""
    if _IPV4.fullmatch(value):
        return value
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        return None


def _usable(node: str | None) -> bool:
    return bool(node) and len(node or "") <= NAME_MAX


def _nothing() -> None:
    pass


def claims_of(
    series: str, label_sets: Iterable[Mapping[str, str]], courtesy: Callable[[], None] = _nothing
) -> list[Claim]:
    """Every (key, node) pair `series` states, deduplicated, in no given order (sorting a big cluster's
    300,000 held the interpreter 0.1-0.3 s); series that state nothing usable (no node, an address that
    is not one) are skipped, as is a key that is the node's own name. `courtesy`: called before each
    label set, when this runs in a worker thread (`alertrouter.process.courtesy`)."""
    out: set[Claim] = set()

    def add(key: str | None, node: str, source: str) -> None:
        if key and key != node and len(key) <= NAME_MAX:
            out.add(Claim(key, node, source))

    for labels in label_sets:
        courtesy()
        if series == "node_uname_info":
            node, instance = labels.get("nodename", ""), labels.get("instance", "")
            if _usable(node) and instance:
                add(lookup_key(instance, instance=True), node, series)
        elif series == "kube_node_info":
            node = labels.get("node", "")
            if _usable(node):
                add(_ip(labels.get("internal_ip", "")), node, series)
        elif series == "kube_pod_info":
            node = labels.get("node", "")
            if not _usable(node):
                continue  # not scheduled yet
            host_ip = _ip(labels.get("host_ip", ""))
            pod_ip = _ip(labels.get("pod_ip", ""))
            add(host_ip, node, "kube_pod_info/host_ip")
            if pod_ip is not None and pod_ip != host_ip and labels.get("host_network") != "true":
                add(pod_ip, node, "kube_pod_info/pod_ip")
            if labels.get("host_network") != "true":  # a host-network pod's host name is the node's
                add(labels.get("pod"), node, "kube_pod_info/pod")
        else:
            raise ValueError(f"no claims in series {series!r}")
    return list(out)


def topology_of(
    label_sets: Iterable[Mapping[str, str]], mapping: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, str]]:
    """node -> {alertrouter label: value} from `kube_node_labels` series, through `mapping` (alertrouter
    label -> kube_node_labels names, the first present and non-empty wins). Two series for one node
    (two kube-state-metrics shards during a rollout) merge, the smaller value winning a disagreement."""
    out: dict[str, dict[str, str]] = {}
    for labels in label_sets:
        node = labels.get("node", "")
        if not _usable(node):
            continue
        found = out.setdefault(node, {})
        for target, names in mapping.items():
            value = next((labels[n] for n in names if labels.get(n)), None)
            if value is not None and (target not in found or value < found[target]):
                found[target] = value
    return {node: labels for node, labels in out.items() if labels}
