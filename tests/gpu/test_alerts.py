"""An alert's labels as the triage reads them (`gpu.alerts`): the Xid, the GPU's own key, the workload."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from alertrouter.gpu.alerts import xid_alert
from alertrouter.gpu.triage import XidAlert

AT = datetime(2026, 11, 21, 8, 14, 3, tzinfo=UTC)
UUID = "GPU-c8a5fc4f-0811-53a5-977b-ec3b4ddcf6ef"


@pytest.mark.parametrize(
    ("labels", "want"),
    [
        ({"xid": "79", "UUID": UUID, "gpu": "3"}, XidAlert("fp", UUID, "", 79, AT)),
        ({"err_code": "45.0", "uuid": f" {UUID} ", "gpu": "3"}, XidAlert("fp", UUID, "", 45, AT)),
        # no UUID: the node and the index; neither: no GPU (it counts towards no GPU's repetitions)
        ({"xid": "13", "gpu": "0"}, XidAlert("fp", "gpu-node-07/0", "", 13, AT)),
        ({"xid": "13"}, XidAlert("fp", "", "", 13, AT)),
        (
            {"xid": "13", "gpu": "0", "exported_namespace": "ml", "exported_pod": "train-0"},
            XidAlert("fp", "gpu-node-07/0", "ml/train-0", 13, AT),
        ),
        ({"xid": "13", "exported_pod": "train-0"}, XidAlert("fp", "", "train-0", 13, AT)),
    ],
)
def test_the_labels_as_triage_reads_them(labels: dict[str, str], want: XidAlert) -> None:
    assert xid_alert("fp", labels, AT, "gpu-node-07") == want


@pytest.mark.parametrize("labels", [{"alertname": "GPUHighTemp", "gpu": "3"}, {"xid": "0"}, {"xid": "garbage"}])
def test_an_alert_naming_no_xid_is_none(labels: dict[str, str]) -> None:
    assert xid_alert("fp", labels, AT, "gpu-node-07") is None
