"""Parsing Prometheus's instant-query answers (fixtures shaped as Prometheus and kube-state-metrics v2
return them) into node claims and topology labels, and the book that resolves and keeps them."""

from __future__ import annotations

import gc
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from alertrouter.discovery.book import Book
from alertrouter.discovery.parse import BadAnswer, Claim, claims_of, decode_vector, query_of, topology_of, vector
from alertrouter.ruleset.topology import DEFAULT_NODE_LABELS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "prometheus"
T0 = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)
MIN = timedelta(minutes=1)


def answer(series: str) -> Any:
    return json.loads((FIXTURES / f"{series}.json").read_text())


def labels_of(series: str) -> list[dict[str, str]]:
    return vector(answer(series))


def test_vector_reads_the_label_sets() -> None:
    found = labels_of("node_uname_info")
    assert len(found) == 5
    assert found[0]["instance"] == "10.0.0.7:9100"
    assert found[0]["nodename"] == "gpu-node-07"


def test_an_empty_result_is_no_series() -> None:
    assert vector({"status": "success", "data": {"resultType": "vector", "result": []}}) == []
    assert claims_of("kube_pod_info", []) == []


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"status": "error", "errorType": "bad_data", "error": 'parse error: unexpected "}"'}, "bad_data"),
        ({"status": "success", "data": {"resultType": "matrix", "result": []}}, "'matrix'"),
        ({"status": "success", "data": {"resultType": "scalar", "result": [1764032400, "1"]}}, "'scalar'"),
        ({"status": "success", "data": {"resultType": "vector"}}, "no result list"),
        ({"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "1"]}]}}, "result[0]"),
        ({"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"a": 1}}]}}, "result[0]"),
        ({"status": "success", "data": {"resultType": "vector", "result": ["x"]}}, "result[0]"),
        ({"status": "success"}, "no data"),
        ({"data": {}}, "not 'success'"),
        ([], "JSON list"),
        ("<html>502 Bad Gateway</html>", "JSON str"),
        (None, "JSON NoneType"),
    ],
)
def test_garbage_is_a_bad_answer_saying_what(body: Any, says: str) -> None:
    with pytest.raises(BadAnswer, match=None) as raised:
        vector(body)
    assert says in str(raised.value)


def test_node_uname_info_claims_the_scraped_address_in_one_spelling() -> None:
    claims = {c.key: c.node for c in claims_of("node_uname_info", labels_of("node_uname_info"))}
    assert claims == {
        "10.0.0.7": "gpu-node-07",
        "10.0.0.8": "gpu-node-08",
        "fd00::9": "gpu-node-09",  # [FD00:0:0:0::9]:9100, as alerts' instance is spelled after address_of
        "10.0.0.10": "gpu-node-10",  # an instance without a port
        "gpu-node-11.dc1.example": "gpu-node-11",  # scraped by DNS name: the name, without the port
    }


def test_kube_pod_info_claims_host_ips_pod_ips_and_pod_names_but_not_host_network_pods() -> None:
    claims = set(claims_of("kube_pod_info", labels_of("kube_pod_info")))
    assert claims == {
        Claim("10.0.0.7", "gpu-node-07", "kube_pod_info/host_ip"),
        Claim("10.244.7.23", "gpu-node-07", "kube_pod_info/pod_ip"),
        Claim("nvidia-dcgm-exporter-5xk2p", "gpu-node-07", "kube_pod_info/pod"),
        Claim("10.0.0.8", "gpu-node-08", "kube_pod_info/host_ip"),
        Claim("10.244.8.41", "gpu-node-08", "kube_pod_info/pod_ip"),
        Claim("nvidia-dcgm-exporter-9tq7w", "gpu-node-08", "kube_pod_info/pod"),
    }  # the node-exporter pod (hostNetwork, pod_ip = host_ip) adds nothing; the pending pod has no node


def test_a_host_network_pod_without_the_label_still_maps_its_ip_as_the_host_ip() -> None:
    """kube-state-metrics before `host_network` existed: a pod IP equal to the host IP is the node's."""
    series = [{"pod": "node-exporter-x", "pod_ip": "10.0.0.7", "host_ip": "10.0.0.7", "node": "gpu-node-07"}]
    assert sorted(claims_of("kube_pod_info", series)) == [  # in no given order
        Claim("10.0.0.7", "gpu-node-07", "kube_pod_info/host_ip"),
        Claim("node-exporter-x", "gpu-node-07", "kube_pod_info/pod"),
    ]


def test_kube_node_info_claims_the_internal_ip() -> None:
    claims = claims_of("kube_node_info", labels_of("kube_node_info"))
    assert sorted((c.key, c.node) for c in claims) == [("10.0.0.7", "gpu-node-07"), ("10.0.0.8", "gpu-node-08")]


@pytest.mark.parametrize(
    "labels",
    [
        {"instance": "10.0.0.7:9100"},  # no nodename
        {"instance": "", "nodename": "gpu-node-07"},
        {"instance": "gpu-node-07:9100", "nodename": "gpu-node-07"},  # names itself: nothing to map
        {"instance": "10.0.0.7:9100", "nodename": "x" * 300},  # not a node name
    ],
)
def test_node_uname_info_without_a_usable_pair_claims_nothing(labels: dict[str, str]) -> None:
    assert claims_of("node_uname_info", [labels]) == []


def test_kube_node_info_with_an_internal_ip_that_is_not_an_address_claims_nothing() -> None:
    assert claims_of("kube_node_info", [{"node": "gpu-node-07", "internal_ip": "<none>"}]) == []


def test_topology_from_kube_node_labels_with_the_default_map() -> None:
    topology = topology_of(labels_of("kube_node_labels"), DEFAULT_NODE_LABELS)
    assert topology == {
        "gpu-node-07": {"region": "north", "zone": "north-a", "rack": "r12"},
        "gpu-node-08": {"region": "south", "zone": "south-b"},  # the deprecated failure-domain labels
    }  # cpu-node-01 has none of the mapped labels


def test_topology_map_is_configurable_and_first_present_wins() -> None:
    series = [{"node": "n1", "label_rack": "", "label_example_com_rack": "r7", "label_team": "llm"}]
    assert topology_of(series, {"rack": ["label_rack", "label_example_com_rack"]}) == {"n1": {"rack": "r7"}}


def took(book: Book, series: str, pairs: list[tuple[str, str]], now: datetime, source: str | None = None) -> None:
    book.took(series, [Claim(k, n, source or series) for k, n in pairs], now)


def test_one_ip_two_nodenames_the_smaller_name_wins_and_it_is_a_conflict() -> None:
    """Two node-exporters answering for one address in the same answer (a re-used IP, a copied VM):
    nothing says which is right; the pick is the smaller name, so every replica makes the same one."""
    book = Book(timedelta(days=7))
    series = [
        {"instance": "10.0.0.7:9100", "nodename": "gpu-node-70"},
        {"instance": "10.0.0.7:9100", "nodename": "gpu-node-07"},
    ]
    book.took("node_uname_info", claims_of("node_uname_info", series), T0)
    assert book.resolve(T0)
    assert book.resolved.discovered.names == {"10.0.0.7": "gpu-node-07"}
    [conflict] = book.resolved.conflicts
    assert (conflict.key, conflict.node, conflict.losers) == ("10.0.0.7", "gpu-node-07", ("gpu-node-70",))


def test_kubernetes_names_a_node_over_its_kernel_host_name() -> None:
    book = Book(timedelta(days=7))
    took(book, "node_uname_info", [("10.0.0.7", "gpu-node-07.cluster.local")], T0)
    took(book, "kube_node_info", [("10.0.0.7", "gpu-node-07")], T0)
    book.resolve(T0)
    assert book.resolved.discovered.names == {"10.0.0.7": "gpu-node-07"}
    assert book.resolved.conflicts == ()  # different ranks: an order, not a conflict


def test_a_renamed_address_goes_to_the_newest_answer() -> None:
    book = Book(timedelta(days=7))
    took(book, "node_uname_info", [("10.0.0.7", "gpu-node-07")], T0)
    book.resolve(T0)
    took(book, "node_uname_info", [("10.0.0.7", "gpu-node-70")], T0 + MIN)
    assert book.resolve(T0 + MIN)
    assert book.resolved.discovered.names == {"10.0.0.7": "gpu-node-70"}


def test_a_name_gone_from_the_answers_is_kept_for_keep_for_then_dropped() -> None:
    """A dead node's node_uname_info goes stale within minutes: its NodeDown still needs the name."""
    book = Book(timedelta(hours=1))
    took(book, "node_uname_info", [("10.0.0.7", "gpu-node-07"), ("10.0.0.8", "gpu-node-08")], T0)
    book.resolve(T0)
    first = book.resolved.discovered
    took(book, "node_uname_info", [("10.0.0.8", "gpu-node-08")], T0 + 10 * MIN)
    assert not book.resolve(T0 + 10 * MIN)
    assert book.resolved.discovered is first  # unchanged: the same snapshot object
    took(book, "node_uname_info", [("10.0.0.8", "gpu-node-08")], T0 + 61 * MIN)
    assert book.resolve(T0 + 61 * MIN)
    assert book.resolved.discovered.names == {"10.0.0.8": "gpu-node-08"}


def test_without_answers_everything_lapses_after_keep_for() -> None:
    book = Book(timedelta(hours=1))
    took(book, "kube_node_info", [("10.0.0.7", "gpu-node-07")], T0)
    book.took_topology({"gpu-node-07": {"region": "north"}}, T0)
    book.resolve(T0)
    assert not book.resolve(T0 + 59 * MIN)  # Prometheus down for 59 minutes: still in force
    assert book.resolve(T0 + 60 * MIN)
    assert book.resolved.discovered.names == {}
    assert book.resolved.discovered.topology == {}


def test_a_current_claim_beats_one_that_only_ages_even_of_a_better_rank() -> None:
    """10.0.0.7 was a node's host IP; the node left, and the address is now a pod's on another node."""
    book = Book(timedelta(days=7))
    took(book, "kube_pod_info", [("10.0.0.7", "old-node")], T0, source="kube_pod_info/host_ip")
    book.resolve(T0)
    took(book, "kube_pod_info", [("10.0.0.7", "gpu-node-08")], T0 + MIN, source="kube_pod_info/pod_ip")
    book.resolve(T0 + MIN)
    assert book.resolved.discovered.names == {"10.0.0.7": "gpu-node-08"}


def test_a_pod_named_like_a_node_does_not_rename_the_node() -> None:
    book = Book(timedelta(days=7))
    took(book, "kube_node_info", [("10.0.0.8", "gpu-node-08")], T0)
    took(book, "kube_pod_info", [("gpu-node-08", "gpu-node-07")], T0, source="kube_pod_info/pod")
    book.resolve(T0)
    assert book.resolved.discovered.names == {"10.0.0.8": "gpu-node-08"}


@pytest.mark.parametrize(
    ("internal_ip", "key"),
    [
        ("10.0.0.7", "10.0.0.7"),
        ("255.255.255.255", "255.255.255.255"),
        ("2001:DB8:0:0::7", "2001:db8::7"),  # written as Python's ipaddress writes it
        ("010.0.0.7", None),  # leading zeros: octal to some parsers, refused
        ("256.0.0.7", None),
        ("10.0.0", None),
        ("10.0.0.7.1", None),
        ("10.0.0.٧", None),  # an Arabic-Indic seven: a digit to a regex's \d, not to an address
        ("<none>", None),
    ],
)
def test_only_addresses_are_claimed_and_each_as_one_spelling(internal_ip: str, key: str | None) -> None:
    claims = claims_of("kube_node_info", [{"node": "gpu-node-07", "internal_ip": internal_ip}])
    assert claims == ([] if key is None else [Claim(key, "gpu-node-07", "kube_node_info")])


def test_a_pod_named_like_a_node_never_takes_the_nodes_name() -> None:
    """A pod on gpu-node-07 named `gpu-node-08` (a node of the cluster): the name stays gpu-node-08's,
    whether the pod's claim is the only one on that name or not; its addresses are its node's."""
    pods = [
        {"pod": "gpu-node-08", "pod_ip": "10.244.7.9", "host_ip": "10.0.0.7", "node": "gpu-node-07"},
        {"pod": "trainer-0", "pod_ip": "10.244.7.10", "host_ip": "10.0.0.7", "node": "gpu-node-07"},
    ]
    nodes = [{"node": "gpu-node-07", "internal_ip": "10.0.0.7"}, {"node": "gpu-node-08", "internal_ip": "10.0.0.8"}]
    book = Book(timedelta(days=7))
    book.took("kube_pod_info", claims_of("kube_pod_info", pods), T0)
    book.took("kube_node_info", claims_of("kube_node_info", nodes), T0)
    book.resolve(T0)
    assert book.resolved.discovered.names == {
        "10.0.0.7": "gpu-node-07",
        "10.0.0.8": "gpu-node-08",
        "10.244.7.9": "gpu-node-07",
        "10.244.7.10": "gpu-node-07",
        "trainer-0": "gpu-node-07",
    }
    assert book.resolved.conflicts == ()


def test_each_series_is_read_for_its_labels_alone() -> None:
    """`kube_node_labels` for the node and every configured name, each once, in the order given."""
    mapping = {"rack": ["label_rack", "label_node_rack"], "pool": ["label_rack", "label_pool"]}
    assert query_of("kube_node_labels", mapping) == (
        "count by (node, label_rack, label_node_rack, label_pool) (kube_node_labels)"
    )
    assert query_of("kube_pod_info", mapping) == "count by (node, host_ip, pod_ip, host_network, pod) (kube_pod_info)"


@pytest.mark.parametrize("series", ["node_uname_info", "kube_node_info", "kube_pod_info", "kube_node_labels"])
def test_a_success_answer_decodes_at_once_to_what_vector_reads_of_it(series: str) -> None:
    content = (FIXTURES / f"{series}.json").read_bytes()
    decoded = decode_vector(content)
    assert decoded == vector(json.loads(content))
    assert decoded  # the fixture has series, or the comparison proves nothing
    assert not any(gc.is_tracked(labels) for labels in decoded)  # nothing for the collector to walk


@pytest.mark.parametrize(
    "content",
    [
        b'{"status": "error", "errorType": "execution", "error": "query processing would load too many samples"}',
        b'{"status": "success", "data": {"resultType": "matrix", "result": []}}',
        b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"node": 7}}]}}',
        b'{"status": "success", "data": {"resultType": "vector", "result": [{"value": [1, "1"]}]}}',
        b"<html>502 Bad Gateway</html>",
        b'{"status": "success", "data": {"resultType": "vector", "result": [{"metric": {"node": "\xff"}}]}}',
    ],
)
def test_anything_else_is_left_to_vector_to_name(content: bytes) -> None:
    assert decode_vector(content) is None


def test_the_work_of_a_refresh_offers_a_pause_per_item() -> None:
    """Run in a worker thread, each step offers the event loop a pause (`alertrouter.process.courtesy`) before
    each label set, claim and key: a big cluster's are hundreds of thousands."""
    offered: list[str] = []
    pods = labels_of("kube_pod_info")
    claims = claims_of("kube_pod_info", pods, lambda: offered.append("read"))
    book = Book(timedelta(days=7))
    book.took("kube_pod_info", claims, T0, lambda: offered.append("took"))
    book.resolve(T0, lambda: offered.append("resolve"))
    keys = {c.key for c in claims}
    assert (offered.count("read"), offered.count("took"), offered.count("resolve")) == (
        len(pods),
        len(claims),
        len(claims) + len(keys),
    )
