"""An alert without `alertname` (Alertmanager stores and forwards any alert with one label) is named
by its label set in every channel's message, as the engine builds it."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from alertrouter.channels.base import MessageKind, Notification, notification_fields
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.render.templates import Templates
from alertrouter.ruleset import load_ruleset
from alertrouter.ruleset.build import compile_rules
from support.scenario import Scenario

TEMPLATES = Templates(builtin_dir=Path(__file__).resolve().parents[2] / "templates")
# What a cron-job exporter's rule without an alert name might send.
LABELS = {"job": "nightly-backup", "instance": "db-1:9100", "severity": "warning"}
CHANNELS = [("dingtalk", "md"), ("email", "html"), ("email", "txt"), ("feishu", "txt"), ("sms", "txt")]
CHANNELS += [("wecom", "md"), ("wecom", "txt")]


def snapshots(rules: Path) -> tuple[MessageSnapshot, MessageSnapshot]:
    """The first and the resolved message about the alert, as the engine builds them."""
    rules.write_text("route: {receiver: oncall, send_resolved: true}\nreceivers: [{name: oncall}]\n")
    sc = Scenario(pipeline=compile_rules(load_ruleset(rules, {})))
    sc.fire(LABELS)
    sc.run(timedelta(minutes=2))
    sc.resolve(LABELS)
    sc.run(timedelta(minutes=10))  # past the group interval
    first, *_, last = [m.message for m in sc.messages()]
    assert not first.resolved
    assert last.resolved
    return first, last


@pytest.fixture(scope="module")
def messages(tmp_path_factory: pytest.TempPathFactory) -> dict[MessageKind, Notification]:
    firing, resolved = snapshots(tmp_path_factory.mktemp("rules") / "rules.yml")
    return {
        MessageKind.FIRING: Notification(MessageKind.FIRING, "oncall", firing.severity, (firing,)),
        MessageKind.RESOLVED: Notification(MessageKind.RESOLVED, "oncall", resolved.severity, (resolved,)),
    }


def test_the_headline_is_the_label_set(messages: dict[MessageKind, Notification]) -> None:
    headline = messages[MessageKind.FIRING].items[0].headline
    assert headline == 'db-1: {instance="db-1:9100", job="nightly-backup", severity="warning"}'


@pytest.mark.parametrize("kind", [MessageKind.FIRING, MessageKind.RESOLVED])
@pytest.mark.parametrize(("channel", "fmt"), CHANNELS)
def test_every_channel_names_the_alert_by_its_labels(
    messages: dict[MessageKind, Notification], channel: str, fmt: str, kind: MessageKind
) -> None:
    text = TEMPLATES.render(channel, fmt, messages[kind])
    assert "nightly-backup" in text
    assert "db-1" in text
    title = TEMPLATES.title(messages[kind])
    assert "nightly-backup" in title


def test_sms_fields_name_the_alert_by_its_labels(messages: dict[MessageKind, Notification]) -> None:
    fields = notification_fields(messages[MessageKind.FIRING])
    # the alert's labels as the engine enriched them (its node derived from `instance`)
    assert fields["alertname"] == '{instance="db-1:9100", job="nightly-backup", node="db-1", severity="warning"}'
