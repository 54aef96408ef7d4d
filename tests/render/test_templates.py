"""Every template file under templates/: renders every sample, keeps hostile label values inert, fits size limits.

Parametrized over the templates tree itself, so a template file added later is tested without touching this file.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification, utf8_len
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.samples import sample_notifications
from alertrouter.render.templates import Templates

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
# The channel/format pairs the design asks for; each needs one template per message kind.
REQUIRED = [("dingtalk", "md"), ("wecom", "md"), ("wecom", "txt"), ("feishu", "txt"), ("sms", "txt")]
REQUIRED += [("email", "html"), ("email", "txt")]


NOT_MESSAGES = {"digest", "console"}  # tested in tests/digest and tests/web/console


def template_files() -> list[tuple[str, str, str]]:
    """(channel, kind, fmt) of every message template; files and folders starting with `_` are helpers,
    and NOT_MESSAGES folders hold other templates (the weekly digest email, the web console)."""
    out = []
    for path in sorted(TEMPLATES_DIR.glob("*/*.j2")):
        if path.parent.name in NOT_MESSAGES:
            continue
        if not path.parent.name.startswith("_") and not path.name.startswith("_"):
            kind, fmt, _ = path.name.split(".")
            out.append((path.parent.name, kind, fmt))
    return out


FILES = template_files()
IDS = [f"{c}/{k}.{f}" for c, k, f in FILES]
SAMPLES = sample_notifications()
MORE = re.compile(r"\+(\d+) more")
MARKER = re.compile(r"M\d{4}M")
NodeFactory = Callable[..., dict[str, Any]]
NoteFactory = Callable[..., Notification]


def test_tree_has_every_channel_format_and_kind(templates: Templates) -> None:
    wanted = {(c, k.value, f) for c, f in REQUIRED for k in MessageKind}
    assert wanted <= set(FILES), sorted(wanted - set(FILES))
    assert {n for n in templates.names() if n.split("/")[0] not in NOT_MESSAGES} == set(IDS)


# --- every template x every sample --------------------------------------------------------------


@pytest.mark.parametrize("sample", sorted(SAMPLES))
@pytest.mark.parametrize(("channel", "kind", "fmt"), FILES, ids=IDS)
def test_every_template_renders_every_sample(
    templates: Templates, channel: str, kind: str, fmt: str, sample: str
) -> None:
    n = replace(SAMPLES[sample], kind=MessageKind(kind))  # e.g. the resolved template given a cluster incident
    out = templates.render(channel, fmt, n)
    first = n.items[0]
    assert n.link
    assert n.link in out
    assert first.headline in out
    label = "RESOLVED" if first.resolved else first.severity.upper()
    assert label in out
    if kind == "coalesced":
        assert str(len(n.items)) in out
    if channel == "sms":
        assert "\n" not in out
        assert not [ch for ch in out if ord(ch) >= 0x2190 and not "\u4e00" <= ch <= "\u9fff"], "SMS has no emoji"


@pytest.mark.parametrize(("channel", "kind", "fmt"), FILES, ids=IDS)
def test_missing_snapshot_keys_still_render(templates: Templates, channel: str, kind: str, fmt: str) -> None:
    bare = Notification(
        kind=MessageKind(kind),
        receiver="r",
        severity="warning",
        items=(MessageSnapshot.from_json({"headline": "bare"}),),
    )
    assert "bare" in templates.render(channel, fmt, bare)


# --- hostile values ------------------------------------------------------------------------------

HOSTILE = [
    "{{ 7*7 }}",
    "{% raw %}",
    "<script>alert(1)</script>",
    "@all",
    "<@all>",
    "[x](http://evil)",
    '<font color="warning">pwn</font>',
    '<at user_id="all">x</at>',
    "@13800000000",
]
EVIL = " ".join(HOSTILE)
HUGE = "y" * 100_000
CONTROL = "\x1b[31m\x07\r\nFAKE: injected line\t\x00"


def hostile_notification(kind: str, make_node: NodeFactory, make_cluster: NodeFactory) -> Notification:
    node = make_node(
        node=EVIL,
        units=("0", "1", "2"),
        summaries=["# heading", EVIL, HUGE],
        labels={"region": "# heading", "rack": CONTROL},
        annotations={"description": CONTROL + HUGE},
        headline=f"{EVIL}: GPUHighTemp on 3/8 GPUs",
        status="resolved" if kind == "resolved" else "firing",
    )
    cluster = make_cluster(members=[EVIL, "# heading", HUGE, CONTROL], headline=f"# heading {EVIL}", region=EVIL)
    items = {"cluster": [cluster], "coalesced": [node, cluster]}.get(kind, [node])
    return Notification(
        MessageKind(kind),
        receiver=EVIL,
        severity="critical",
        items=tuple(MessageSnapshot.from_json(i) for i in items),
        link=None,
    )


@pytest.mark.parametrize(("channel", "kind", "fmt"), FILES, ids=IDS)
def test_hostile_values_are_inert(
    templates: Templates, make_node: NodeFactory, make_cluster: NodeFactory, channel: str, kind: str, fmt: str
) -> None:
    out = templates.render(channel, fmt, hostile_notification(kind, make_node, make_cluster))
    assert "49" not in out  # {{ 7*7 }} was never evaluated
    assert "{% raw %}" in out  # ... and label values are shown, as text
    assert not re.search(r"[\x00-\x09\x0b-\x1f\x7f]", out)
    assert "y" * 1025 not in out
    assert utf8_len(out) < 30_000
    if fmt != "html":
        assert not re.search(r"^\W*FAKE", out, re.MULTILINE), "a value's newline must not start a line"
    if fmt == "html":
        assert "<script" not in out
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
        assert '<font color="warning">pwn' not in out
    elif fmt == "md":
        for dangerous in (
            "<script",
            "<@all>",
            "@all",
            "@13800000000",
            "](http://evil)",
            "[x]",
            '<font color="warning">pwn',
            "<at ",
        ):
            assert dangerous not in out, dangerous
        assert not re.search(r"^[\s>*-]*#+\s*heading", out, re.MULTILINE), "a value must not become a heading"
        assert "{{ 7" in out
    elif channel in ("sms", "email"):  # plain text read by a person or a phone: shown literally
        assert "{{ 7*7 }}" in out
        assert "<script>alert(1)</script>" in out
    else:  # chat robots' plain text: no mention syntax of any vendor
        for dangerous in ("<@all>", "@all", "@13800000000", "<at "):
            assert dangerous not in out, dangerous
        assert "{{ 7*7 }}" in out


# --- size limits ----------------------------------------------------------------------------------


def big_notification(
    kind: str, make_node: NodeFactory, make_cluster: NodeFactory, make: NoteFactory
) -> tuple[Notification, int]:
    """A notification with a list far too long for any limit, each entry marked M0000M..; and the list's length."""
    if kind == "cluster":
        members = [f"gpu-node-{i:04d}: GPUHighTemp M{i:04d}M on 6/8 GPUs" for i in range(1000)]
        return make(MessageKind.CLUSTER, [make_cluster(members=members)]), 1000
    if kind == "coalesced":
        items = [make_node(node=f"gpu-node-{i:04d}", headline=f"gpu-node-{i:04d}: M{i:04d}M") for i in range(200)]
        return make(MessageKind.COALESCED, items), 200
    units = [str(i) for i in range(1000)]
    status = "resolved" if kind == "resolved" else "firing"
    item = make_node(units=units, total=1000, summaries=[f"temperature M{i:04d}M" for i in range(1000)], status=status)
    return make(MessageKind(kind), [item]), 1000


@pytest.mark.parametrize("limit", [2048, 4096, 20_000])
@pytest.mark.parametrize(("channel", "kind", "fmt"), FILES, ids=IDS)
def test_limit_bytes_respected_with_more_line(
    templates: Templates,
    make_node: NodeFactory,
    make_cluster: NodeFactory,
    make_notification: NoteFactory,
    channel: str,
    kind: str,
    fmt: str,
    limit: int,
) -> None:
    n, total = big_notification(kind, make_node, make_cluster, make_notification)
    out = templates.render(channel, fmt, n, limit_bytes=limit)
    assert utf8_len(out) <= limit
    more = MORE.search(out)
    if utf8_len(templates.render(channel, fmt, n)) > limit:
        assert more, "a cut message says how many it left out"
    if more:
        hidden = int(more.group(1))
        assert hidden > 0
        assert len(set(MARKER.findall(out))) + hidden == total, "shown + hidden = all"
        assert n.link
        assert n.link in out


@pytest.mark.parametrize("limit", [1, 100, 400])
@pytest.mark.parametrize(("channel", "kind", "fmt"), FILES, ids=IDS)
def test_tiny_limits_are_respected_too(
    templates: Templates,
    make_node: NodeFactory,
    make_cluster: NodeFactory,
    make_notification: NoteFactory,
    channel: str,
    kind: str,
    fmt: str,
    limit: int,
) -> None:
    n, _ = big_notification(kind, make_node, make_cluster, make_notification)
    assert utf8_len(templates.render(channel, fmt, n, limit_bytes=limit)) <= limit
