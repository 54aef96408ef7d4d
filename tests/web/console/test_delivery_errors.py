"""The delivery loop's own error sentences, as it writes them, are worded in Chinese on a zh-CN page
(`web.console.errors`): produced here by the real policy and worker helpers, so a changed sentence fails
this test instead of reaching a Chinese reader in English. What a vendor answered stays as written."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from alertrouter.channels.base import ChannelError
from alertrouter.delivery.batch import capped_note
from alertrouter.delivery.policy import MAX_UNEXPECTED, Unexpected, after_attempt
from alertrouter.message.i18n import translations
from alertrouter.ruleset.channels import RetryConfig
from alertrouter.web.console.errors import error_text

NOW = datetime(2026, 11, 21, 8, 0, tzinfo=UTC)
RETRY = RetryConfig(initial=timedelta(seconds=10), max=timedelta(minutes=5), give_up_after=timedelta(hours=24))
BOOM = Unexpected("ValueError", "invalid literal for int() with base 10: 'x'")
ZH = translations("zh-CN")


def _error(failure: ChannelError | Unexpected, unexpected: int, *, combined: bool = False, age: int = 1) -> str:
    outcome = after_attempt(
        failure, attempts=unexpected, unexpected=unexpected, created_at=NOW - timedelta(minutes=age), now=NOW,
        retry=RETRY, block=timedelta(minutes=10), rng=random.Random(0), combined=combined,
    )  # fmt: skip
    assert outcome.error is not None
    return outcome.error


@pytest.mark.parametrize(
    ("stored", "shown"),
    [
        (lambda: _error(BOOM, 1), "意外失败（第 1/5 次）：对方原文：ValueError: invalid literal"),
        (lambda: _error(BOOM, MAX_UNEXPECTED), "意外失败 5 次后转为死信：对方原文：ValueError"),
        (lambda: _error(BOOM, 1, combined=True), "合并消息发送失败，现逐条单独发送：对方原文：ValueError"),
        (lambda: _error(BOOM, 1, age=25 * 60), "1 天后放弃：对方原文：ValueError"),
        (lambda: capped_note(["13800000000", "13800000001"]), "已达每日上限，2 个号码未发送"),
        (lambda: _error(ChannelError("errcode 310000: keywords not in content"), 1), "对方原文：errcode 310000"),
    ],
)
def test_the_delivery_loops_sentences_read_in_chinese(stored: object, shown: str) -> None:
    text = stored()  # type: ignore[operator]
    assert error_text(ZH, "zh-CN", text).startswith(shown)
    assert error_text(translations("en"), "en", text) == text  # English: as stored
