"""LabelSet: a compact label set that must read, compare and serialise as the dict it replaces."""

from __future__ import annotations

import copy
import sys

import orjson
from hypothesis import example, given, settings
from hypothesis import strategies as st

from alertrouter.fingerprints import fingerprint
from alertrouter.labels import matches_all, parse_matchers
from alertrouter.labelset import LabelSet
from alertrouter.pipeline.aggregate import common_labels

# dcgm-exporter's labels on one GPU, in the order a scrape gives them (tests/support/scenario.py shape)
DCGM = {
    "alertname": "GPUHighTemp",
    "instance": "10.20.0.9:9400",
    "job": "dcgm-exporter",
    "Hostname": "gpu-node-00009",
    "gpu": "0",
    "UUID": "GPU-5c7b1e6a-2f1d-4c4e-9a1e-7d3f0c2b9e11",
    "device": "nvidia0",
    "modelName": "NVIDIA H100 80GB HBM3",
    "pci_bus_id": "00000000:18:00.0",
    "severity": "critical",
}


def test_reads_like_the_dict_it_was_made_from() -> None:
    labels = LabelSet(DCGM)
    assert list(labels) == list(DCGM)
    assert list(labels.items()) == list(DCGM.items())
    assert len(labels) == len(DCGM)
    assert labels["gpu"] == "0"
    assert labels.get("gpu") == "0"
    assert labels.get("node") is None
    assert labels.get("node", "") == ""
    assert "Hostname" in labels
    assert "node" not in labels
    assert labels.as_dict() == DCGM
    assert dict(labels) == DCGM
    assert fingerprint(labels) == fingerprint(DCGM)
    assert matches_all(parse_matchers('{alertname="GPUHighTemp",gpu=~"0|1"}'), labels)


def test_equal_to_the_same_labels_whatever_their_form() -> None:
    labels = LabelSet(DCGM)
    assert labels == DCGM
    assert labels == DCGM
    assert labels == LabelSet(dict(DCGM))
    assert labels == LabelSet(dict(reversed(DCGM.items())))  # other names order: other table, same labels
    assert labels != {**DCGM, "gpu": "1"}
    assert labels != LabelSet({**DCGM, "gpu": "1"})
    assert labels != {k: v for k, v in DCGM.items() if k != "gpu"}
    assert labels != LabelSet({})
    assert LabelSet({}) == {}
    assert labels != list(DCGM.items())


def test_serialises_through_a_dict_and_survives_copies() -> None:
    labels = LabelSet(DCGM)
    assert orjson.loads(orjson.dumps(labels.as_dict())) == labels
    assert copy.deepcopy(labels) == labels
    assert copy.copy(labels) == labels
    assert repr(labels).startswith("LabelSet({'alertname': 'GPUHighTemp'")


def test_label_sets_of_one_shape_share_names_and_values() -> None:
    parsed = [orjson.loads(orjson.dumps({**DCGM, "gpu": str(g)})) for g in range(2)]
    a, b = (LabelSet(p) for p in parsed)
    assert a._index is b._index
    assert a["Hostname"] is b["Hostname"] is sys.intern("gpu-node-00009")
    assert a["gpu"] == "0"
    assert b["gpu"] == "1"


def test_a_value_that_is_not_a_string_is_kept() -> None:
    # JSON columns are not typed: a stored row may hold a number where a label's string belongs
    labels = LabelSet(orjson.loads(b'{"alertname": "Up", "port": 9100, "job": "node"}'))
    assert labels == {"alertname": "Up", "port": 9100, "job": "node"}
    assert labels["job"] is sys.intern("node")


@settings(max_examples=300, deadline=None)
@example([(("alertname", "node", "gpu"), ["a", "b", "a"], True), (("alertname", "gpu", "node"), ["a", "b", "a"], True)])
@example([(("alertname", "node", "gpu"), ["a", "b", "a"], True), (("alertname", "node"), ["a", "b", "a"], True)])
@given(
    st.lists(
        st.tuples(
            st.sampled_from([("alertname", "node", "gpu"), ("alertname", "gpu", "node"), ("alertname", "node")]),
            st.lists(st.sampled_from(["a", "b", ""]), min_size=3, max_size=3),
            st.booleans(),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_common_labels_of_label_sets_are_those_of_the_dicts(
    shapes: list[tuple[tuple[str, ...], list[str], bool]],
) -> None:
    # An incident's alerts: mostly label sets of one shape (compared position by position), sometimes
    # another order of the same names, fewer names, or a plain dict; what they share is the same.
    dicts = [dict(zip(names, values, strict=False)) for names, values, _ in shapes]
    sets = [LabelSet(d) if as_set else d for d, (_, _, as_set) in zip(dicts, shapes, strict=True)]
    want = {n: v for n, v in dicts[0].items() if all(d.get(n) == v and n in d for d in dicts)}
    got = common_labels(sets)
    assert dict(got) == want
    assert list(got) == list(want)  # in the first alert's order
