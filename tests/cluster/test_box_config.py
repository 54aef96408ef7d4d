"""What the cluster in a box changes in the shipped configs, and nothing more (no processes started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.box import point_channels, shorten_for
from support.procs import REPO

SHIPPED_RULES = sorted((REPO / "rules" / "prometheus").glob("*.rules.yml"))
FAKES = {
    "dingtalk": "http://127.0.0.1:4001",
    "wecom": "http://127.0.0.1:4002",
    "aliyun": "http://127.0.0.1:4003",
    "tencent": "http://127.0.0.1:4004",
}

# A rule file in the shipped layout where "for:" also appears where it is not a rule's `for`: in a folded
# annotation, in a literal block expression, in a label value and in a comment.
TRICKY = """\
groups:
  - name: tricky
    rules:
      # for: 10m is what the runbook asks
      - alert: GPUHighTemp
        expr: |
          DCGM_FI_DEV_GPU_TEMP
            for: 5m
          > 85
        for: 5m
        labels:
          severity: warning
          why: "for: 1h"
        annotations:
          description: >-
            The GPU has been hot
            for: 5m
            and more.
      - record: node:up:sum
        expr: sum(up)
      - alert: NodeDown
        expr: up == 0
        for:   1m   # as shipped
        labels: {severity: critical}
"""


def _rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


@pytest.mark.parametrize("path", SHIPPED_RULES, ids=lambda p: p.name)
def test_every_shipped_rule_gets_the_short_for_and_nothing_else_changes(path: Path) -> None:
    shipped = path.read_text()
    short = shorten_for(shipped, "2s")
    before, after = _rules(shipped), _rules(short)
    assert [r.get("for") for r in after] == ["2s" if "for" in r else None for r in before]
    assert [{k: v for k, v in r.items() if k != "for"} for r in after] == [
        {k: v for k, v in r.items() if k != "for"} for r in before
    ]
    # byte for byte outside the `for:` lines
    changed = [(a, b) for a, b in zip(shipped.splitlines(), short.splitlines(), strict=True) if a != b]
    assert len(changed) == sum("for" in r for r in before)
    assert all(b.strip() == "for: 2s" and a.strip().startswith("for: ") for a, b in changed)


def test_for_in_text_expressions_labels_and_comments_is_left_alone() -> None:
    short = shorten_for(TRICKY, "2s")
    assert short.splitlines() == [
        *TRICKY.splitlines()[:9],
        "        for: 2s",
        *TRICKY.splitlines()[10:22],
        "        for:   2s   # as shipped",
        "        labels: {severity: critical}",
    ]
    rules = _rules(short)
    assert "for: 5m" in rules[0]["expr"]
    assert "for: 5m" in rules[0]["annotations"]["description"]
    assert rules[0]["labels"]["why"] == "for: 1h"
    assert [r.get("for") for r in rules] == ["2s", None, "2s"]


def test_a_for_it_cannot_reach_fails_loudly() -> None:
    flow = "groups:\n  - name: g\n    rules:\n      - {alert: NodeDown, expr: up == 0, for: 1m}\n"
    with pytest.raises(ValueError, match="cannot reach"):
        shorten_for(flow, "2s")


def test_every_shipped_channel_is_pointed_at_a_fake_and_the_rest_is_as_shipped() -> None:
    shipped = (REPO / "rules" / "channels.yml").read_text()
    pointed = point_channels(shipped, smtp_port=4025, **FAKES)
    before = {c["name"]: c for c in yaml.safe_load(shipped)["channels"]}
    after = {c["name"]: c for c in yaml.safe_load(pointed)["channels"]}
    assert after.keys() == before.keys()
    assert {c["type"] for c in before.values()} == {"dingtalk", "wecom", "sms", "voice", "email"}  # what the box fakes
    for name, channel in after.items():
        kind = channel["type"]
        if kind == "dingtalk":
            assert channel.pop("url") == "http://127.0.0.1:4001/robot/send", name
        elif kind == "wecom":
            assert channel.pop("url") == "http://127.0.0.1:4002/cgi-bin/webhook/send", name
        elif kind == "sms" or (kind == "voice" and "aliyun" in channel):
            assert channel["aliyun"].pop("endpoint") == "http://127.0.0.1:4003/", name
        elif kind == "voice":
            assert channel["tencent"].pop("endpoint") == "http://127.0.0.1:4004/", name
        else:
            assert channel.pop("port") == 4025, name
        assert channel == before[name]
    # only lines added: the shipped text is still there line for line, in order
    kept = iter(pointed.splitlines())
    assert all(any(line == other for other in kept) for line in shipped.splitlines())


@pytest.mark.parametrize(
    "channel",
    [
        "  - name: feishu-core\n    type: feishu\n    url: ${FEISHU_URL:-}\n",  # a type the box has no fake for
        "  - {name: dingtalk-x, type: dingtalk, access_token: x}\n",  # flow style: no line to insert after
    ],
    ids=["unknown-type", "flow-style"],
)
def test_a_channel_left_pointing_at_a_vendor_fails_loudly(channel: str) -> None:
    text = "channels:\n" + channel
    with pytest.raises(AssertionError, match="not pointed at a fake"):
        point_channels(text, smtp_port=4025, **FAKES)
