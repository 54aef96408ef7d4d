"""The product's fixed words in one place (`message.vocabulary`): every value the engine, the outbox and the
deliveries store has its word, the enums keyed here hold the same values as those the stages decide with,
and the places that name one value name it alike; said in each language from the catalogue."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import pytest

from alertrouter.digest.summarize import MECHANISMS as COUNTED_MECHANISMS
from alertrouter.message import vocabulary as v
from alertrouter.message.i18n import translations
from alertrouter.message.notification import MessageKind as NotificationKind
from alertrouter.message.words import words_for
from alertrouter.model import AlertStatus, AttemptOutcome, DeliveryStatus, IncidentKind, OutboxStatus
from alertrouter.pipeline import escalation, stale, throttle, types
from alertrouter.web.console import views


def values(kind: type[enum.StrEnum]) -> set[str]:
    return {str(member) for member in kind}


@pytest.mark.parametrize(
    ("ours", "decided"),
    [
        (v.Decision, types.Decision),
        (v.Reason, throttle.NotifyReason),
        (v.StaleReason, stale.Reason),
    ],
)
def test_the_enums_keyed_here_hold_the_stages_values(ours: type[enum.StrEnum], decided: type[enum.StrEnum]) -> None:
    # The stages import `message`, so their enums cannot key its catalogues: a value added on one side
    # without the other fails here.
    assert values(ours) == values(decided)


@pytest.mark.parametrize(
    ("catalogue", "kind", "left_out"),
    [
        (v.SEVERITY_LABELS, v.Severity, set()),
        (v.SEVERITY_NAMES, v.Severity, set()),
        (v.STATUS, AlertStatus, set()),
        (v.REASONS, v.Reason, {"escalated"}),  # worded with its step by `Words.reason`
        (v.DECISION_TEXT, v.Decision, set()),
        (v.DECISIONS, v.Decision, set()),
        (v.STALE_REASONS, v.StaleReason, set()),
        (v.INCIDENT_STATES, v.IncidentState, set()),
        (v.KINDS, IncidentKind, set()),
        (v.SILENCE_STATES, v.SilenceState, set()),
        (v.CONSOLE_REASONS, v.Reason, set()),
        (v.ESCALATIONS, v.Escalation, set()),
        (v.OUTBOX, OutboxStatus, set()),
        (v.DELIVERIES, DeliveryStatus, set()),
        (v.ATTEMPTS, AttemptOutcome, set()),
        (v.ADDRESS_SOURCES, v.AddressSource, set()),
        (v.MESSAGE_KINDS, v.MessageKind, set()),
        (v.DIGEST_REASONS, v.Reason, set()),
        (v.DELIVERY_OUTCOMES, DeliveryStatus, {"sent"}),  # the digest counts what was sent, names the rest
    ],
)
def test_every_catalogue_words_each_value_of_its_enum(
    catalogue: Mapping[Any, v.Term], kind: type[enum.StrEnum], left_out: set[str]
) -> None:
    assert all(isinstance(key, kind) for key in catalogue)
    assert values(kind) - {str(key) for key in catalogue} == left_out


def test_the_digest_names_every_mechanism_it_counts() -> None:
    assert {str(m) for m in COUNTED_MECHANISMS} | {"held"} == {str(m) for m in v.MECHANISMS}
    assert all(term.context == "mechanism" for term in v.MECHANISMS.values())


def test_the_console_names_one_value_alike_wherever_it_is_stored() -> None:
    seen: dict[str, v.Term] = {}
    clashes = []
    for catalogue in v.CONSOLE_CATALOGUES:
        for value, term in catalogue.items():
            if seen.setdefault(str(value), term) != term:
                clashes.append((str(value), seen[str(value)].text, term.text))
    assert clashes == []
    assert set(v.CONSOLE_WORDS) == set(seen)


def test_every_state_a_row_stores_has_a_console_word() -> None:
    stored = set().union(*(values(k) for k in (AlertStatus, OutboxStatus, DeliveryStatus, AttemptOutcome)))
    stored |= values(types.Decision) | values(stale.Reason) | values(escalation.Stop) | values(IncidentKind)
    assert stored - set(v.CONSOLE_WORDS) == set()


def test_the_notification_kind_is_the_one_worded_here() -> None:
    assert NotificationKind is v.MessageKind


@pytest.mark.parametrize(
    ("value", "en", "zh"),
    [
        ("muted_by_interval", "muted by interval", "时间窗口屏蔽"),
        ("failed_over", "failed over", "已切换备用渠道"),
        ("retry", "will retry", "将重试"),
        ("source_down", "a node-down alert of its node fires", "其节点的宕机告警正在触发"),
        ("a-future-state", "a-future-state", "a-future-state"),  # not listed: shown as stored
    ],
)
def test_the_console_says_a_stored_value_in_the_page_language(value: str, en: str, zh: str) -> None:
    assert views.word(translations("en"), value) == en
    assert views.word(translations("zh-CN"), value) == zh


def test_one_value_is_worded_by_place_in_its_own_context() -> None:
    zh = translations("zh-CN")
    mechanism = v.say(zh, v.MECHANISMS, "stale")
    assert mechanism == v.MECHANISMS[v.Decision.STALE].said(zh) == "数据中断（无数据）"
    assert v.say(zh, v.DECISIONS, "stale") == "数据中断"  # the console's badge: its own word
    assert v.say(zh, v.MECHANISMS, "unknown") is None
    words = words_for("zh-CN")
    assert words.reasons[v.Reason.GREW] == v.REASONS[v.Reason.GREW].said(zh)
    assert words.labels[v.Severity.CRITICAL] == v.SEVERITY_LABELS[v.Severity.CRITICAL].said(zh)
