"""What the voice vendors share: the spoken template variables, which numbers are called, and that a
resolved message calls nobody; with an in-process provider that records the calls."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import httpx
import pytest

from alertrouter.channels.base import ChannelError, MessageKind
from alertrouter.channels.registry import build_channel
from alertrouter.channels.voice import VoiceChannel, speakable, voice_params
from alertrouter.message.i18n import Locale
from alertrouter.message.snapshot import MessageSnapshot
from alertrouter.ruleset.channels import VoiceChannelConfig
from support.channels import ITEM, notification

SAMPLE = notification(recipients=("+86 138-0000-0000", "13800000001"), delivery_id=7)


class Recorder:
    def __init__(self, fail: Mapping[str, ChannelError] | None = None) -> None:
        self.calls: list[tuple[str, dict[str, str], str | None]] = []
        self.fail = dict(fail or {})

    async def call(self, number: str, params: Mapping[str, str], *, reference: str | None = None) -> str:
        if number in self.fail:
            raise self.fail[number]
        self.calls.append((number, dict(params), reference))
        return "call-1"


def config(**changes: object) -> VoiceChannelConfig:
    tencent = {
        "secret_id": "AKIDunitVoice01",
        "secret_key": "unitVoiceSecretKey01",
        "voice_sdk_app_id": "1400006666",
        "template_id": "4356",
    }
    return VoiceChannelConfig.model_validate(
        {"name": "voice", "type": "voice", "provider": "tencent", "tencent": tencent, **changes}
    )


@pytest.mark.parametrize(
    ("text", "spoken"),
    [
        ("gpu-node-07: XID 79 on GPU 3", "gpu node 07 XID 79 on GPU 3"),
        ("see https://evil.example/x now", "see now"),
        ("[x](www.evil.example) 100% #1 $5", "x ( ) 100 1 5"),
        ("温度过高\u00a0– 92°C", "温度过高 92C"),
        ("line\nbreak\ttab", "line break tab"),
        ("HTTP 500 from 10.0.0.7:9100", "H T T P 500 from 10 0 0 7 9100"),
    ],
)
def test_speakable(text: str, spoken: str) -> None:
    assert speakable(text) == spoken


def test_params_are_spoken_cut_and_never_empty() -> None:
    params = {"h": "headline", "n": "node", "s": "summary"}
    found = voice_params(SAMPLE, params, 12)
    assert found == {"h": "gpu node 0..", "n": "gpu node 07", "s": "none"}
    zh = voice_params(dataclasses.replace(SAMPLE, locale=Locale("zh-CN", "Asia/Shanghai")), {"s": "summary"}, 12)
    assert zh == {"s": "无"}


def test_the_spoken_severity_is_the_word_of_the_receivers_language() -> None:
    """Said to a Chinese receiver as 严重 (as DingTalk and WeCom show it), not the label value critical."""
    assert voice_params(SAMPLE, {"s": "severity"}, 12) == {"s": "critical"}
    zh = dataclasses.replace(SAMPLE, locale=Locale("zh-CN", "Asia/Shanghai"))
    assert voice_params(zh, {"s": "severity", "n": "node"}, 12) == {"s": "严重", "n": "gpu node 07"}


async def test_one_call_per_number_with_the_delivery_as_reference() -> None:
    recorder = Recorder()
    async with httpx.AsyncClient() as client:
        await VoiceChannel(config(), client=client, provider=recorder).send(SAMPLE)
    spoken = {"headline": "gpu node 07 GPUHighTemp on 6.."}  # a message without `where` stored: cut
    assert recorder.calls == [("+8613800000000", spoken, "7"), ("13800000001", spoken, "7")]


async def test_a_failed_number_reports_the_others_as_reached() -> None:
    refused = ChannelError("tencent SendTtsVoice: LimitExceeded.DeliveryFrequencyLimit", rate_limited=True, code="x")
    recorder = Recorder({"+8613800000000": refused})
    async with httpx.AsyncClient() as client:
        with pytest.raises(ChannelError) as caught:
            await VoiceChannel(config(), client=client, provider=recorder).send(SAMPLE)
    error = caught.value
    assert (error.rate_limited, error.permanent, error.reached) == (True, False, ("13800000001",))
    assert error.message.startswith("voice voice: 1 of 2 called; +86****0000: tencent SendTtsVoice")


@pytest.mark.parametrize(
    ("changes", "code"),
    [({"recipients": ()}, "no-recipients"), ({"kind": MessageKind.RESOLVED}, "resolved")],
)
async def test_refused_before_any_call(changes: dict[str, object], code: str) -> None:
    n = dataclasses.replace(SAMPLE, **changes)  # type: ignore[arg-type]
    if code == "resolved":
        item = dataclasses.replace(n.items[0], status=type(n.items[0].status)("resolved"))
        n = dataclasses.replace(n, items=(item,))
    recorder = Recorder()
    async with httpx.AsyncClient() as client:
        with pytest.raises(ChannelError) as caught:
            await VoiceChannel(config(), client=client, provider=recorder).send(n)
    assert (caught.value.permanent, caught.value.code) == (True, code)
    assert recorder.calls == []


async def test_the_registry_builds_it() -> None:
    async with httpx.AsyncClient() as client:
        channel = build_channel(config(), client=client, renderer=None)  # type: ignore[arg-type]
    assert (channel.type, channel.name) == ("voice", "voice")


@pytest.mark.parametrize(
    ("alertname", "language", "spoken"),
    [
        ("GPUHighTemp", "en", "gpu node 07 GPUHighTemp"),  # not "gpu node 07 GPUHighTemp on 6.."
        ("GPUHighTemp", "zh-CN", "gpu node 07：GPUHighTemp"),
        ("GPUFallenOffBus", "en", "gpu node 07 GPUFallenOffBus"),  # not "gpu node 07 GPUFallenOffBus.."
        ("GPUFallenOffBus", "zh-CN", "gpu node 07：GPUFallenOffBus"),
    ],
)
async def test_the_call_says_the_node_and_the_alert_and_drops_the_count(
    alertname: str, language: str, spoken: str
) -> None:
    """A 30-character template variable (a common TTS template's limit): the node and the alert name are
    said whole; the GPU count, which does not fit, is left out rather than cut mid-word."""
    item = {**ITEM, "labels": {**ITEM["labels"], "alertname": alertname}}
    item["summary"] = {**ITEM["summary"], "where": "gpu-node-07", "alertname": alertname}
    n = dataclasses.replace(SAMPLE, items=(MessageSnapshot.from_json(item),), locale=Locale(language, "Asia/Shanghai"))
    recorder = Recorder()
    async with httpx.AsyncClient() as client:
        await VoiceChannel(config(param_max_length=30), client=client, provider=recorder).send(n)
    assert [params for _, params, _ in recorder.calls] == [{"headline": spoken}] * 2
