"""Follow-on Xids folded into their root, end to end: a real `alertrouter serve` receives the webhook posts
Alertmanager makes for the xid79_then_xid45 story (GPU 3 of gpu-node-07 falls off the bus, its 7 other GPUs
report Xid 45 a rule evaluation later; one post per alertname), in order and in reverse order. Exactly one
page, worded in zh-CN on DingTalk and in English on WeCom; the 45s read as folded (inhibited by
`gpu-follow-on`, the 79 as source) in GET /api/v1/alerts."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from e2e.harness import Router, Store, wait_for
from support.fakes.dingtalk import FakeDingTalk
from support.fakes.wecom import FakeWeCom
from support.gpu_fixtures import load

pytestmark = [pytest.mark.e2e]

DT_TOKEN = "dt-token-fold-41b7c2"  # literal test credentials, nothing real
DT_SECRET = "SEC0a1b2c3d4e5f60718293a4b5c6d7e8f9"
WECOM_KEY = "wecom-key-fold-9d3e"

# group_wait: the root's first message waits for the posts Alertmanager makes of one story (the shipped
# rules wait 30s); both posts are made here one after the other.
RULES = """\
aggregation:
  - name: gpu-by-node
    matchers: ['gpu!=""']
    group_by: [alertname, node]
    count: {label: gpu, per_group: 8}
    group_wait: 3s
    rollup: off
route:
  receiver: oncall-zh
  group_wait: 3s
  group_interval: 2s
  repeat_interval: 1h
  routes:
    - {matchers: ['xid_action="RESTART_BM"'], receiver: oncall-zh, continue: true}
    - {matchers: ['xid_action="RESTART_BM"'], receiver: oncall-en}
receivers:
  - {name: oncall-zh, language: zh-CN, channels: [robot]}
  - {name: oncall-en, language: en, channels: [wecom]}
channels:
  - name: robot
    type: dingtalk
    url: %(dingtalk)s/robot/send
    access_token: ${DT_TOKEN}
    secret: ${DT_SECRET}
    timeout: 2s
    retry: {initial: 1s, max: 2s, give_up_after: 1h}
  - name: wecom
    type: wecom
    url: %(wecom)s/cgi-bin/webhook/send
    key: ${WECOM_KEY}
    timeout: 2s
    retry: {initial: 1s, max: 2s, give_up_after: 1h}
"""
ZH = "GPU 3：Xid 79（GPU 已从总线掉线）— 重启节点；另有 7 块 GPU 随之报告 Xid 45（连带故障）"
EN = "GPU 3: Xid 79 (GPU has fallen off the bus) — reboot the node; 7 other GPUs reported Xid 45 as a consequence"


@pytest.fixture
def fakes() -> Iterator[tuple[FakeDingTalk, FakeWeCom]]:
    with FakeDingTalk({DT_TOKEN: DT_SECRET}) as dingtalk, FakeWeCom([WECOM_KEY]) as wecom:
        yield dingtalk, wecom


def dingtalk_texts(fake: FakeDingTalk) -> list[str]:
    return [str(body[body["msgtype"]].get("text", "")).replace("\\", "") for body in fake.messages(DT_TOKEN)]


def wecom_texts(fake: FakeWeCom) -> list[str]:
    return [str(body[body["msgtype"]].get("content", "")).replace("\\", "") for body in fake.messages(WECOM_KEY)]


def folded(router: Router) -> list[dict[str, Any]] | None:
    """The 7 Xid 45 alerts once every one of them is decided folded, else None."""
    alerts = [a for a in router.alerts() if a["labels"].get("xid") == "45"]
    done = len(alerts) == 7 and all(a["decision"] == "inhibited" for a in alerts)
    return alerts if done else None


@pytest.mark.parametrize("reverse", [False, True], ids=["in-order", "reverse"])
def test_one_page_says_the_root_and_its_follow_ons(
    store: Store,
    start_router: Callable[..., Router],
    fakes: tuple[FakeDingTalk, FakeWeCom],
    tmp_path: Path,
    reverse: bool,
) -> None:
    dingtalk, wecom = fakes
    directory = tmp_path / "rules"
    directory.mkdir()
    (directory / "rules.yml").write_text(RULES % {"dingtalk": dingtalk.url, "wecom": wecom.url})
    router = start_router(
        store,
        env={
            "ALERTROUTER_CONFIG": str(directory),
            "ALERTROUTER_EXTERNAL_URL": "http://alertrouter.test",
            "DT_TOKEN": DT_TOKEN,
            "DT_SECRET": DT_SECRET,
            "WECOM_KEY": WECOM_KEY,
            "ALERTROUTER_DELIVERY_INTERVAL": "200ms",
        },
    )
    story = load("xid79_then_xid45").shifted(datetime.now(UTC))
    posts = list(reversed(story.posts)) if reverse else list(story.posts)
    for post in posts:
        r = router.post_webhook(post.payload)
        assert r.status_code == 200, r.text

    alerts = wait_for(lambda: folded(router), what="the 45s folded into the 79")
    (root,) = [a for a in router.alerts() if a["labels"].get("xid") == "79"]
    for a in alerts:
        assert a["decision_detail"] == {"inhibited_by": root["fingerprint"], "inhibit_rule": "gpu-follow-on"}
    (zh,) = wait_for(lambda: dingtalk_texts(dingtalk) or None, what="the DingTalk page")
    (en,) = wait_for(lambda: wecom_texts(wecom) or None, what="the WeCom page")
    assert ZH in zh
    assert EN in en
    assert "GPUFallenOffBus" in en
    assert "GPUXidError" not in zh + en  # the 45s' own incident gives no page
