"""The engine stores, beside each English headline, the facts a message is worded from in the receiver's
language (`alertrouter.message.phrases.headline`): a node's `where` and `alertname`, a storm's scope and members."""

from __future__ import annotations

from datetime import timedelta

from alertrouter.message.i18n import translations
from alertrouter.message.phrases import headline
from support.scenario import Scenario, gpu_labels

MIN = timedelta(minutes=1)


def test_a_node_message_carries_where_and_what() -> None:
    sc = Scenario()
    for gpu in range(6):
        sc.fire(gpu_labels("gpu-node-07", gpu, region="north"))
    sc.run(2 * MIN)
    (msg,) = sc.messages()
    assert msg.message.headline == "gpu-node-07: GPUHighTemp on 6/8 GPUs"
    stored = msg.message.to_json()["summary"]  # as the outbox row holds it
    assert (stored["where"], stored["alertname"]) == ("gpu-node-07", "GPUHighTemp")
    assert headline(translations("en"), msg.message) == msg.message.headline
    assert headline(translations("zh-CN"), msg.message) == "gpu-node-07：6/8 块 GPU GPUHighTemp"


def test_a_storm_message_carries_its_scope_and_its_members_facts() -> None:
    sc = Scenario()
    for n in range(40):
        for gpu in range(8):
            sc.fire(gpu_labels(f"gpu-node-{n:03d}", gpu, alertname="GPUXidError", region="north", rack="r12"))
    sc.run(2 * MIN)
    first = sc.messages()[0].message
    assert first.headline == "GPUXidError on 40 nodes in region north, rack r12: 320 GPUs"
    stored = first.to_json()["summary"]  # as the outbox row holds it
    assert stored["scope"] == [["region", "north"], ["rack", "r12"]]
    assert stored["member_facts"][0] == {"where": "gpu-node-000", "units": 8, "units_total": 8}
    assert headline(translations("en"), first) == first.headline
    assert headline(translations("zh-CN"), first) == "north 区 r12 机架 40 个节点 GPUXidError，共 320 块 GPU"
