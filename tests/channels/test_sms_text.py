"""The SMS text rules: GSM/ASCII normalisation, template variables cut to length, recipients, config."""

from __future__ import annotations

import dataclasses
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from alertrouter.channels.base import ChannelError, MessageKind, Notification, notification_fields
from alertrouter.channels.sms import (
    CUT_MARKER,
    TEXT_LIMIT_BYTES,
    SmsChannel,
    fit_param,
    gsm7_compatible,
    normalize_sms,
    sms_numbers,
    sms_params,
    sms_text,
)
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import AlertItem, MessageSnapshot
from alertrouter.render.templates import Templates
from alertrouter.ruleset.channels import SmsChannelConfig
from support.channels import ITEM, notification

SAMPLE = notification(recipients=("+8613800000000",))


def with_headline(headline: str) -> Notification:
    return dataclasses.replace(SAMPLE, items=(MessageSnapshot.from_json({**ITEM, "headline": headline}),))


class TextRenderer:
    """A `Renderer` that returns fixed text and records what it was asked for."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[tuple[str, str, int | None]] = []

    def render(self, channel: str, fmt: str, notification: Notification, *, limit_bytes: int | None = None) -> str:
        self.calls.append((channel, fmt, limit_bytes))
        return self.text

    def title(self, notification: Notification, *, limit_bytes: int | None = None) -> str:
        return "title"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("GPU\u00a0hot", "GPU hot"),  # no-break space
        ("GPU\u202fhot", "GPU hot"),  # narrow no-break space
        ("GPU\u2009hot", "GPU hot"),  # thin space
        ("GPU\u3000hot", "GPU hot"),  # ideographic space
        ("\u201cquoted\u201d", '"quoted"'),
        ("it\u2019s", "it's"),
        ("a\u2013b\u2014c\u2212d", "a-b-c-d"),
        ("wait\u2026", "wait..."),
        ("z\u200bero\u200c\u200dwidth\ufeff", "zerowidth"),
        ("soft\u00adhyphen", "softhyphen"),
        ("evil\u202eoverride\u202c", "eviloverride"),  # bidi controls are Cf
        ("bell\x07", "bell"),
        ("92\u00b0C", "92C"),
        ("load \u2265 90%", "load >= 90%"),
        ("a \u2192 b", "a -> b"),
        ("GPU 温度过高", "GPU 温度过高"),  # Chinese stays
        ("节点，温度", "节点，温度"),  # so does Chinese punctuation
        ("plain ascii", "plain ascii"),
    ],
)
def test_normalize_maps_to_gsm_ascii(raw: str, expected: str) -> None:
    assert normalize_sms(raw) == expected


def test_normalize_single_line_collapses_all_whitespace() -> None:
    assert normalize_sms("  a\tb\r\n\nc\u2028d  ", single_line=True) == "a b c d"


def test_normalize_multiline_keeps_breaks_and_trims() -> None:
    assert normalize_sms("line 1\u00a0 \r\nline 2\n\n\n\nline 3  ") == "line 1\nline 2\n\nline 3"


def test_normalized_english_headline_is_gsm7() -> None:
    raw = "gpu-node-07\u00a0\u2014 \u201cGPUHighTemp\u201d on 6/8 GPUs\u2026"
    assert not gsm7_compatible(raw)
    assert gsm7_compatible(normalize_sms(raw))
    assert not gsm7_compatible("温度")


@pytest.mark.parametrize(
    ("value", "limit", "expected"),
    [
        ("short", 20, "short"),
        ("exactly-twenty-chars", 20, "exactly-twenty-chars"),
        ("gpu-node-07: GPUHighTemp on 6/8 GPUs", 20, "gpu-node-07: GPUHi" + CUT_MARKER),
        ("gpu-node-07: GPUHighTemp", 15, "gpu-node-07:" + CUT_MARKER),  # no space before the marker
        ("GPU 节点 温度过高告警 北区机房", 8, "GPU 节点" + CUT_MARKER),  # characters, not bytes
        ("abcdef", 2, "ab"),  # no room for a marker
        ("abcdef", 1, "a"),
        ("", 20, "-"),
        ("\u200b\u00a0", 20, "-"),  # nothing visible left
        ("a\u00a0\u00a0b", 3, "a b"),  # normalised before measuring
    ],
)
def test_fit_param(value: str, limit: int, expected: str) -> None:
    result = fit_param(value, limit)
    assert result == expected
    assert len(result) <= limit


def test_sms_params_follow_config_order_and_length() -> None:
    params = {"sev": "severity", "what": "headline", "where": "node", "n": "gpus", "at": "since"}
    got = sms_params(SAMPLE, params, 12)
    assert list(got) == ["sev", "what", "where", "n", "at"]
    assert got == {
        "sev": "critical",
        "what": "gpu-node-0" + CUT_MARKER,
        "where": "gpu-node-07",
        "n": "2/8",
        "at": "10:00",
    }


def test_sms_params_normalise_hostile_unicode() -> None:
    got = sms_params(with_headline("gpu\u00a0node\u200b\u201807\u2019"), {"h": "headline"}, 20)
    assert got == {"h": "gpu node'07'"}


def test_sms_text_renders_within_limit_and_normalises() -> None:
    renderer = TextRenderer("GPU\u00a0hot \u2014 node\u200b-07\u2026")
    assert sms_text(renderer, SAMPLE) == "GPU hot - node-07..."
    assert renderer.calls == [("sms", "txt", TEXT_LIMIT_BYTES)]


def test_sms_text_cuts_a_renderer_that_overshoots() -> None:
    text = sms_text(TextRenderer("x" * 1000), SAMPLE, limit_bytes=50)
    assert len(text.encode()) <= 50
    assert text.endswith("...")


def test_sms_numbers_clean_and_dedupe() -> None:
    assert sms_numbers(("+86 138-0000-0000", "+8613800000000", " ", "(+86) 139.0000.0001")) == [
        "+8613800000000",
        "+8613900000001",
    ]


def _config(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "name": "sms-oncall",
        "type": "sms",
        "provider": "generic",
        "generic": {"url": "http://127.0.0.1:9/sms"},
    }
    return {**base, **overrides}


def test_schema_rejects_unknown_field_in_params() -> None:
    with pytest.raises(ValidationError, match="unknown field 'hostname'"):
        SmsChannelConfig.model_validate(_config(params={"h": "hostname"}))


def test_schema_rejects_unknown_key() -> None:
    with pytest.raises(ValidationError, match="extra"):
        SmsChannelConfig.model_validate(_config(param_max_lenght=10))


def test_schema_needs_the_providers_settings() -> None:
    with pytest.raises(ValidationError, match="provider aliyun needs"):
        SmsChannelConfig.model_validate(_config(provider="aliyun"))


async def test_no_recipients_is_permanent() -> None:
    config = SmsChannelConfig.model_validate(_config())
    async with httpx.AsyncClient() as client:
        channel = SmsChannel(config, client=client, renderer=TextRenderer("x"))
        with pytest.raises(ChannelError) as caught:
            await channel.send(dataclasses.replace(SAMPLE, recipients=(" ",)))
    assert caught.value.permanent
    assert caught.value.code == "no-recipients"


def test_a_storm_s_sms_fields_count_its_gpus() -> None:
    # A cluster message's summary counts its GPUs as a number, not a list of units: the SMS fields
    # once took len() of it and every SMS about a storm failed with a TypeError.
    storm = {**ITEM, "kind": "cluster", "summary": {"nodes": 40, "units": 320, "members": [], "alerts": 320}}
    fields = notification_fields(dataclasses.replace(SAMPLE, items=(MessageSnapshot.from_json(storm),)))
    assert (fields["gpus"], fields["count"]) == ("320", "320")


def test_a_resolved_sms_does_not_read_as_the_firing_one() -> None:
    # The shipped template has no `status` variable (severity, node, alert, gpus): a resolved SMS once
    # said "critical gpu-node-07 GPUHighTemp" exactly like the page it resolves.
    params = {"severity": "severity", "node": "node", "alert": "alertname"}
    firing = sms_params(SAMPLE, params, 20)
    resolved_item = MessageSnapshot.from_json({**ITEM, "reason": "resolved", "status": "resolved"})
    resolved = dataclasses.replace(SAMPLE, kind=MessageKind.RESOLVED, items=(resolved_item,))
    assert firing == {"severity": "critical", "node": "gpu-node-07", "alert": "GPUHighTemp"}
    assert sms_params(resolved, params, 20) == {"severity": "resolved", "node": "gpu-node-07", "alert": "GPUHighTemp"}
    # a coalesced message with anything still firing keeps its worst severity
    items = (MessageSnapshot.from_json(ITEM), resolved_item)
    both = dataclasses.replace(SAMPLE, kind=MessageKind.COALESCED, items=items)
    assert notification_fields(both)["severity"] == "critical"


@pytest.mark.parametrize("language", ["en", "zh-CN"])
def test_an_sms_cut_to_its_limit_keeps_the_incident_link_whole(language: str) -> None:
    """An alert without alertname is named by its label set; long values (4-byte characters, as a
    hostile or careless exporter may send) make the one line of an SMS too long. The text before the
    link is cut, never the link: an SMS whose link is cut off cannot be acted on."""
    long = "9" * 20 + "\U00010000" * 40
    labels = {"job": "backup", "region": long, "zone": long, "rack": long, "team": long}
    item = MessageSnapshot.from_json({**ITEM, "headline": "", "labels": labels, "summary": {}})
    item = dataclasses.replace(item, alerts=(AlertItem("fp-1", labels, True),))
    n = dataclasses.replace(SAMPLE, kind=MessageKind.UPDATE, items=(item,), locale=Locale(language, "Asia/Shanghai"))
    templates = Templates()
    text = sms_text(templates, n)
    assert len(text.encode()) <= TEXT_LIMIT_BYTES
    assert n.link is not None
    assert text.endswith(" " + n.link)
    assert "backup" in text  # cut, not dropped: the alert is still named
