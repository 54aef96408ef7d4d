"""Templates (alertrouter.render.templates): overrides, strictness, the sandbox, titles, time zones, mentions, links."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jinja2 import UndefinedError
from jinja2.exceptions import SecurityError

from alertrouter.channels.base import Mentions, MessageKind, Notification, utf8_len
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.context import unit_cells
from alertrouter.render.samples import render_sample, sample_notifications
from alertrouter.render.templates import Templates
from alertrouter.web.console import views

TEMPLATES_DIR = Path(__file__).resolve().parents[2] / "templates"
NodeFactory = Callable[..., dict[str, Any]]
NoteFactory = Callable[..., Notification]


def user_templates(tmp_path: Path, name: str, source: str) -> Templates:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(source, encoding="utf-8")
    return Templates(tmp_path, builtin_dir=TEMPLATES_DIR)


@pytest.fixture
def firing(make_node: NodeFactory, make_notification: NoteFactory) -> Notification:
    return make_notification(MessageKind.FIRING, [make_node()])


# --- user templates ------------------------------------------------------------------------------


def test_user_dir_overrides_one_file(tmp_path: Path, firing: Notification) -> None:
    t = user_templates(tmp_path, "dingtalk/firing.md.j2", "OURS {{ incident.node }}")
    assert t.render("dingtalk", "md", firing) == f"OURS {firing.items[0].labels['node']}"
    assert firing.items[0].headline in t.render("wecom", "md", firing)  # the other files stay built-in


def test_user_template_can_use_builtin_macros(tmp_path: Path, firing: Notification) -> None:
    source = '{% import "dingtalk/_macros.md.j2" as m %}MINE\n{{ m.facts(incident) }}'
    out = user_templates(tmp_path, "dingtalk/firing.md.j2", source).render("dingtalk", "md", firing)
    assert out.startswith("MINE")
    assert firing.items[0].labels["node"] in out


@pytest.mark.parametrize("source", ["{{ no_such_variable }}", "{{ incident.no_such_field }}", "{{ items[99] }}"])
def test_unknown_variable_fails_loudly(tmp_path: Path, firing: Notification, source: str) -> None:
    with pytest.raises(UndefinedError):
        user_templates(tmp_path, "wecom/firing.txt.j2", source).render("wecom", "txt", firing)


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__ }}",
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ lipsum.__globals__ }}",
        "{{ incident.__class__ }}",
        "{{ incident.labels.update({'node': 'x'}) }}",
    ],
)
def test_sandbox_refuses_unsafe_access(tmp_path: Path, firing: Notification, source: str) -> None:
    with pytest.raises(SecurityError):
        user_templates(tmp_path, "email/firing.html.j2", source).render("email", "html", firing)


@pytest.mark.parametrize("channel", ["../etc", "dingtalk/../../x", ""])
def test_template_names_cannot_leave_the_tree(templates: Templates, firing: Notification, channel: str) -> None:
    with pytest.raises(ValueError, match="bad template name"):
        templates.render(channel, "md", firing)


# --- titles ----------------------------------------------------------------------------------------


def test_title_names_severity_and_headline(templates: Templates, firing: Notification) -> None:
    assert templates.title(firing) == f"[CRITICAL] {firing.items[0].headline}"


def test_title_of_resolved(templates: Templates, make_node: NodeFactory, make_notification: NoteFactory) -> None:
    item = make_node(status="resolved")
    assert templates.title(make_notification(MessageKind.RESOLVED, [item])) == f"[RESOLVED] {item['headline']}"


def test_title_of_coalesced_counts_severities(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    items = [make_node(node=f"n{i}", severity="critical") for i in range(3)]
    items += [make_node(node=f"w{i}", severity="warning") for i in range(9)]
    assert templates.title(make_notification(MessageKind.COALESCED, items)) == "12 notifications: 3 critical, 9 warning"


def test_title_is_one_capped_line(templates: Templates, make_node: NodeFactory, make_notification: NoteFactory) -> None:
    n = make_notification(MessageKind.FIRING, [make_node(headline="subject\r\nBcc: victim@example.org " + "é" * 300)])
    title = templates.title(n)
    assert "\n" not in title
    assert "\r" not in title
    assert utf8_len(title) <= 128
    assert utf8_len(templates.title(n, limit_bytes=40)) <= 40


# --- context -----------------------------------------------------------------------------------------


def test_since_is_local_time_in_the_configured_zone(firing: Notification) -> None:
    # The builder opens incidents at 10:00 UTC and decides 5 minutes later; Shanghai is UTC+8 all year.
    out = Templates(builtin_dir=TEMPLATES_DIR, timezone="Asia/Shanghai").render("wecom", "txt", firing)
    assert "18:00" in out
    assert "5m" in out
    assert "10:00" not in out


def test_unknown_timezone_is_refused() -> None:
    with pytest.raises(ValueError, match="Mars/Olympus"):
        Templates(builtin_dir=TEMPLATES_DIR, timezone="Mars/Olympus")


def test_gpu_grid_and_count(templates: Templates, make_node: NodeFactory, make_notification: NoteFactory) -> None:
    units = ["0", "1", "2", "3", "5", "7"]
    out = templates.render("email", "txt", make_notification(MessageKind.FIRING, [make_node(units=units, total=8)]))
    assert "".join("■" if str(i) in units else "□" for i in range(8)) in out
    assert f"{len(units)}/8" in out


@pytest.mark.parametrize("channel", ["dingtalk", "wecom", "email"])
def test_a_node_exporter_device_is_no_gpu(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str
) -> None:
    """NodeDiskPressure carries node-exporter's device="/dev/nvme0n1p2": its line names the node, not a
    "GPU /dev/nvme0n1p2"; dcgm-exporter's device="nvidia3" (with no gpu label) is still a GPU."""
    disk = make_node(alertname="NodeDiskPressure", units=["x"], headline="gpu-node-04: NodeDiskPressure")
    disk["summary"]["units"] = []
    disk["alerts"][0]["labels"] = {"alertname": "NodeDiskPressure", "node": "gpu-node-04", "device": "/dev/nvme0n1p2"}
    disk["alerts"][0]["annotations"]["summary"] = "Node 10.0.0.4:9100: / has 7% free"
    fmt = "md" if channel != "email" else "txt"
    out = templates.render(channel, fmt, make_notification(MessageKind.FIRING, [disk]))
    assert "GPU /dev/nvme0n1p2" not in out
    assert "gpu-node-04: Node 10.0.0.4:9100: / has 7% free" in out
    gpu = make_node(units=["x"])
    gpu["alerts"][0]["labels"] = {"alertname": "GPUHighTemp", "node": "gpu-node-07", "device": "nvidia3"}
    gpu["alerts"][0]["annotations"]["summary"] = "GPU 3 hot"
    out = templates.render(channel, fmt, make_notification(MessageKind.FIRING, [gpu]))
    assert "GPU nvidia3: GPU 3 hot" in out


def test_label_values_are_capped(templates: Templates, make_node: NodeFactory, make_notification: NoteFactory) -> None:
    out = templates.render(
        "email", "txt", make_notification(MessageKind.FIRING, [make_node(node="n" * 5000, headline="h")])
    )
    assert "n" * 200 in out
    assert "n" * 257 not in out


def test_mentions_use_each_vendors_syntax(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    at = Mentions(mobiles=("13912345678", "<@all>"), user_ids=("li.lei", "x> [y](http://e)"), all=True)
    n = Notification(MessageKind.FIRING, "r", "critical", (MessageSnapshot.from_json(make_node()),), mentions=at)
    dingtalk = templates.render("dingtalk", "md", n)
    assert "@13912345678" in dingtalk
    assert "@li.lei" in dingtalk
    wecom = templates.render("wecom", "md", n)
    assert "<@li.lei>" in wecom
    assert "<@all>" in wecom
    assert "http://e" not in dingtalk + wecom  # ids that are not ids are dropped
    assert "<@all>" not in dingtalk
    assert "@" not in templates.render("wecom", "txt", n)  # the text message mentions through its JSON list
    assert '<at user_id="li.lei">' in templates.render("feishu", "txt", n)


@pytest.mark.parametrize(("channel", "fmt"), [("dingtalk", "md"), ("email", "html"), ("wecom", "txt")])
def test_only_http_links_are_shown(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory, channel: str, fmt: str
) -> None:
    out = templates.render(
        channel, fmt, make_notification(MessageKind.FIRING, [make_node()], link="javascript:alert(1)")
    )
    assert "javascript" not in out


def test_link_cannot_break_out_of_markdown(
    templates: Templates, make_node: NodeFactory, make_notification: NoteFactory
) -> None:
    link = "https://a.example/i?x=1) [evil](http://evil"
    out = templates.render("dingtalk", "md", make_notification(MessageKind.FIRING, [make_node()], link=link))
    assert "](http://evil" not in out
    assert "https://a.example/i?x=1" in out


def test_last_resort_is_hard_truncation(templates: Templates, firing: Notification) -> None:
    for limit in (1, 10, 60):
        assert utf8_len(templates.render("dingtalk", "md", firing, limit_bytes=limit)) <= limit


# --- samples ----------------------------------------------------------------------------------------


def test_one_sample_per_kind() -> None:
    samples = sample_notifications()
    assert set(samples) == {k.value for k in MessageKind}
    assert all(n.kind.value == name for name, n in samples.items())
    assert len(samples["coalesced"].items) == 12
    assert samples["cluster"].items[0].headline == "GPUHighTemp on 37 nodes in region north: 211 GPUs"


def test_render_sample(templates: Templates) -> None:
    headline = sample_notifications()["firing"].items[0].headline
    assert headline in render_sample(templates, "dingtalk/firing.md")


def test_render_sample_unknown_name_lists_available(templates: Templates) -> None:
    with pytest.raises(ValueError, match=r"available: .*dingtalk/firing\.md"):
        render_sample(templates, "pager/firing.md")


@pytest.mark.parametrize(
    ("units", "total", "grid"),
    [
        (["0", "1", "7"], 8, "■■□□□□□■"),
        ([], 8, "□□□□□□□□"),
        (["²"], 8, ""),  # str.isdigit() is true, int() refuses it: no grid, no exception
        (["٣"], 8, ""),  # an Arabic-Indic digit: int() would take it, but it is no GPU index an exporter sends
        (["8"], 8, ""),
        (["0"], 17, ""),
        (["0"], True, ""),
        ("01", 8, ""),
    ],
)
def test_the_gpu_grid_is_drawn_only_for_small_ascii_indexes(units: object, total: object, grid: str) -> None:
    cells = unit_cells(units, total)
    assert "".join("■" if lit else "□" for lit in cells) == grid
    console = views.gpu_grid({"units": units, "units_total": total})
    assert [c.firing for c in console] == list(cells)  # the console draws the same grid as chat
