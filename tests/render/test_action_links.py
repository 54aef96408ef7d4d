"""The acknowledge/silence links in rendered messages: which templates show them, in what form, and that
size fitting cuts entries (or, at the last resort, the text above them) but never the links."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification, utf8_len
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.samples import render_sample, sample_notifications
from alertrouter.render.templates import Templates

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
BASE = "https://alerts.example.org"
# Shaped like real tokens (base64url payload "." base64url signature); the renderer does not verify them.
ACK = f"{BASE}/a/eyJhIjoiYWNrIiwiZXhwIjoxNzk1MzQyMzUwLCJpIjo3NywibiI6InRlc3Qtbm9uY2UtMSJ9.Zm9v_YmFy-YmF6"
SILENCE = f"{BASE}/a/eyJhIjoic2lsZW5jZSIsImV4cCI6MTc5NTM0MjM1MCwiaSI6NzcsIm4iOiJ0ZXN0LTIifQ.cXV4_cXV1eA-"
CHAT = [("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt"), ("feishu", "txt"), ("email", "txt"), ("email", "html")]
FIRING_KINDS = ["firing", "update", "cluster"]
NodeFactory = Callable[..., dict[str, Any]]


def with_links(n: Notification, **changes: Any) -> Notification:
    return replace(n, ack_link=ACK, silence_link=SILENCE, silence_for=timedelta(minutes=90), **changes)


@pytest.fixture
def firing(make_node: NodeFactory, make_cluster: NodeFactory) -> Callable[[str], Notification]:
    def make(kind: str) -> Notification:
        item = make_cluster(members=["gpu-node-01: hot"]) if kind == "cluster" else make_node()
        n = Notification(
            MessageKind(kind), "oncall", "critical", (MessageSnapshot.from_json(item),), link=f"{BASE}/incidents/77"
        )
        return with_links(n)

    return make


@pytest.mark.parametrize("kind", FIRING_KINDS)
@pytest.mark.parametrize(("channel", "fmt"), CHAT)
def test_firing_templates_show_both_links(
    templates: Templates, firing: Callable[[str], Notification], channel: str, fmt: str, kind: str
) -> None:
    out = templates.render(channel, fmt, firing(kind))
    if fmt == "md":
        assert f"[Acknowledge]({ACK})" in out
        assert f"[Silence 1h 30m]({SILENCE})" in out
    elif fmt == "html":
        assert f'<a href="{ACK}"' in out
        assert f'<a href="{SILENCE}"' in out
        assert "Silence 1h 30m</a>" in out
    else:
        lines = out.splitlines()
        assert f"Acknowledge: {ACK}" in lines
        assert f"Silence 1h 30m: {SILENCE}" in lines


@pytest.mark.parametrize("kind", [*FIRING_KINDS, "resolved"])
def test_sms_never_carries_action_links(templates: Templates, firing: Callable[[str], Notification], kind: str) -> None:
    out = templates.render("sms", "txt", replace(firing("firing"), kind=MessageKind(kind)))
    assert "/a/" not in out
    assert f"{BASE}/incidents/77" in out


@pytest.mark.parametrize("kind", ["resolved", "coalesced"])
@pytest.mark.parametrize(("channel", "fmt"), CHAT)
def test_resolved_and_coalesced_templates_do_not_show_action_links(
    templates: Templates, firing: Callable[[str], Notification], channel: str, fmt: str, kind: str
) -> None:
    out = templates.render(channel, fmt, replace(firing("firing"), kind=MessageKind(kind)))
    assert "/a/" not in out


@pytest.mark.parametrize("value", ["javascript:alert(1)", f"{BASE}/a/x)[pwn](http://evil", f'{BASE}/a/"><script>'])
@pytest.mark.parametrize(("channel", "fmt"), CHAT)
def test_a_link_cannot_become_markup(
    templates: Templates, firing: Callable[[str], Notification], channel: str, fmt: str, value: str
) -> None:
    out = templates.render(channel, fmt, replace(firing("firing"), ack_link=value))
    assert "javascript:" not in out
    assert "](http://evil" not in out
    assert "<script" not in out


def huge_node(make_node: NodeFactory) -> dict[str, Any]:
    units = [str(i) for i in range(1000)]
    return make_node(units=units, total=1000, summaries=[f"温度过高 temperature {i}" for i in range(1000)])


@pytest.mark.parametrize("limit", [2048, 4096])
@pytest.mark.parametrize(("channel", "fmt"), CHAT)
def test_fitting_cuts_entries_not_links(
    templates: Templates, make_node: NodeFactory, make_cluster: NodeFactory, channel: str, fmt: str, limit: int
) -> None:
    for item in (huge_node(make_node), make_cluster(members=[f"gpu-node-{i:04d}: hot" for i in range(1000)])):
        kind = MessageKind.CLUSTER if item["kind"] == "cluster" else MessageKind.FIRING
        n = with_links(
            Notification(kind, "oncall", "critical", (MessageSnapshot.from_json(item),), link=f"{BASE}/incidents/77")
        )
        out = templates.render(channel, fmt, n, limit_bytes=limit)
        assert utf8_len(out) <= limit
        assert re.search(r"\+\d+ more", out)
        assert ACK in out
        assert SILENCE in out
        assert f"{BASE}/incidents/77" in out


@pytest.mark.parametrize(("channel", "fmt"), [("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt")])
def test_last_resort_cut_keeps_the_links_and_cuts_the_text_above(
    templates: Templates, make_node: NodeFactory, channel: str, fmt: str
) -> None:
    """A headline and location so long that even no listed alert fits: the head is cut, not the links."""
    long = "节点" * 300
    item = make_node(headline=long, node=long, labels={"region": long, "rack": long})
    n = with_links(
        Notification(
            MessageKind.FIRING, "oncall", "critical", (MessageSnapshot.from_json(item),), link=f"{BASE}/incidents/77"
        )
    )
    limit = 1200
    assert utf8_len(templates.render(channel, fmt, n, limit_bytes=None)) > 2 * limit
    out = templates.render(channel, fmt, n, limit_bytes=limit)
    assert utf8_len(out) <= limit
    assert ACK in out
    assert SILENCE in out
    assert "…" in out
    assert out.index("…") < out.index(ACK)


def test_last_resort_without_room_for_the_links_is_a_plain_cut(templates: Templates, make_node: NodeFactory) -> None:
    n = with_links(
        Notification(MessageKind.FIRING, "oncall", "critical", (MessageSnapshot.from_json(make_node()),), link=None)
    )
    out = templates.render("wecom", "txt", n, limit_bytes=100)
    assert utf8_len(out) <= 100
    assert out.startswith("[CRITICAL]")


def test_samples_of_firing_kinds_have_links_and_the_others_do_not() -> None:
    samples = sample_notifications()
    with_actions = {kind for kind, n in samples.items() if n.ack_link and n.silence_link and n.silence_for}
    assert with_actions == set(FIRING_KINDS)
    assert all(n.ack_link is None and n.silence_link is None for k, n in samples.items() if k not in FIRING_KINDS)


@pytest.mark.parametrize("name", ["dingtalk/firing.md", "wecom/cluster.txt", "email/update.html", "feishu/firing.txt"])
def test_render_sample_shows_the_links(name: str) -> None:
    samples = sample_notifications()
    kind = name.split("/")[1].split(".")[0]
    out = render_sample(Templates(builtin_dir=TEMPLATES_DIR), name)
    ack, silence = samples[kind].ack_link, samples[kind].silence_link
    assert ack
    assert silence
    assert ack in out
    assert silence in out
    assert "Silence 1h" in out
