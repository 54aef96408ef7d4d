"""SMS template variables: storm (cluster) incidents, whose summary counts units rather than listing them,
have variables at all."""

from __future__ import annotations

import dataclasses

from alertrouter.channels.base import SMS_FIELDS
from alertrouter.channels.sms import sms_params
from support.channels import ITEM, notification

LINK = "http://alertrouter.example/incidents/12"


def with_values(**changes: object) -> dict[str, str]:
    item = {**ITEM, **changes}
    params = {f"v_{f}": f for f in SMS_FIELDS}
    return sms_params(dataclasses.replace(notification(), items=(item,), link=LINK), params, 200)


def test_storm_incident_has_variables() -> None:
    """A cluster snapshot's `summary.units` is a count (211), not a list of indexes."""
    head = "GPUHighTemp on 37 nodes"
    got = with_values(kind="cluster", headline=head, summary={"headline": head, "nodes": 37, "units": 211})
    assert got["v_gpus"] == "211"
    assert got["v_headline"] == "GPUHighTemp on 37 nodes"
