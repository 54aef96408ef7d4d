"""A stale incident's messages say why its data stopped, naming the node-down alert (`summary.no_data_*`, written
by `pipeline.incident.node_facts`), in every channel and both languages; and a message's alert count is what
it lists plus its "+N more", never the muted alerts it leaves out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.message.i18n import Locale
from alertrouter.pipeline.silence import Silence
from alertrouter.render.templates import Templates
from support.scenario import Scenario, dcgm_labels

from .conftest import TEMPLATES_DIR, node_item, notification

ZH = Locale("zh-CN", "Asia/Shanghai")
EN = Locale("en", "Asia/Shanghai")
NODE_KEY = 'node{alertname="NodeDown",node="gpu-node-07"}'


def _rendered(kind: MessageKind, item: dict[str, Any], locale: Locale) -> Iterator[tuple[str, str]]:
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    n: Notification = replace(notification(kind, [item]), locale=locale)
    for name in templates.names():
        channel, _, rest = name.partition("/")
        template_kind, _, fmt = rest.partition(".")
        if template_kind == kind.value:
            # markdown's bold and escapes are not what is read: "**1** firing" reads "1 firing"
            yield name, re.sub(r"[*\\]", "", templates.render(channel, fmt, n))


def _linked(item: dict[str, Any], *, down: bool) -> dict[str, Any]:
    summary = {"no_data_source": NODE_KEY, "no_data_cause": "NodeDown", "no_data_node": "gpu-node-07"}
    return {**item, "summary": {**item["summary"], **summary, "no_data_down": down}}


@pytest.mark.parametrize(
    ("locale", "expected"),
    [(EN, "No data while gpu-node-07 was down (NodeDown)"), (ZH, "gpu-node-07 宕机期间无数据（NodeDown）")],
    ids=["en", "zh-CN"],
)
def test_the_resolved_message_of_a_gpu_incident_says_its_node_was_down(locale: Locale, expected: str) -> None:
    item = _linked(node_item(units=("2", "5"), status="resolved"), down=False)
    outputs = dict(_rendered(MessageKind.RESOLVED, item, locale))
    assert {name.partition("/")[0] for name in outputs} == {"dingtalk", "wecom", "feishu", "sms", "email"}
    for name, out in outputs.items():
        assert expected in out, f"{name}\n{out}"


@pytest.mark.parametrize(
    ("locale", "expected"),
    [(EN, "No data: gpu-node-07 is down (NodeDown)"), (ZH, "无数据：gpu-node-07 宕机（NodeDown）")],
    ids=["en", "zh-CN"],
)
def test_a_firing_message_of_a_partly_stale_incident_says_its_node_is_down(locale: Locale, expected: str) -> None:
    item = _linked(node_item(units=("2",)), down=True)
    item["summary"] |= {"firing": 3, "eligible": 1, "stale": 2}
    for name, out in _rendered(MessageKind.FIRING, item, locale):
        assert expected in out, f"{name}\n{out}"


@pytest.mark.parametrize("locale", [EN, ZH], ids=["en", "zh-CN"])
def test_the_alert_count_is_what_the_message_lists(locale: Locale) -> None:
    """Two GPU alerts fire, one of them silenced: the message lists the one told and says "1 firing"."""
    item = node_item(units=("2",))
    item["summary"] |= {"firing": 2, "eligible": 1, "muted": 1, "silenced": 1}
    for name, out in _rendered(MessageKind.FIRING, item, locale):
        if name.startswith("sms/"):
            continue  # one line: no count, no list
        counts = re.findall(r"(\d+) (?:条)?(?:firing|触发中)", out)
        assert counts == ["1"], f"{name}\n{out}"
        assert "GPU 2" in out
        assert "more alerts" not in out, f"{name}\n{out}"
        assert "另有" not in out, f"{name}\n{out}"


@pytest.mark.parametrize("locale", [EN, ZH], ids=["en", "zh-CN"])
def test_a_node_with_a_silenced_gpu_is_told_with_the_count_it_lists(locale: Locale) -> None:
    """The engine's own snapshot: GPUs 2 and 5 of gpu-node-07 hot (dcgm-exporter's labels), GPU 5 silenced."""
    sc = Scenario()
    hot = [dcgm_labels("10.0.0.7", "gpu-node-07", g, alertname="GPUHighTemp", severity="warning") for g in (2, 5)]
    sc.silences.append(Silence.parse("s1", ['gpu="5"'], sc.now, sc.now + timedelta(hours=2)))
    for labels in hot:
        sc.fire(labels)
    sc.run(timedelta(minutes=1))
    (first,) = sc.messages()
    stored = first.message.to_json()["summary"]  # as the outbox row holds it
    assert (stored["firing"], stored["eligible"]) == (2, 1)
    for name, out in _rendered(MessageKind.FIRING, first.message.to_json(), locale):
        if name.startswith("sms/"):
            continue
        assert re.findall(r"(\d+) (?:条)?(?:firing|触发中)", out) == ["1"], f"{name}\n{out}"
        assert "GPU 2" in out
        assert "GPU 5" not in out
