"""A message's alert count is what it lists plus its "+N more", never the muted alerts it leaves out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from alertrouter.channels.base import MessageKind, Notification
from alertrouter.i18n import Locale
from alertrouter.render.templates import Templates

from .conftest import TEMPLATES_DIR, node_item, notification

ZH = Locale("zh-CN", "Asia/Shanghai")
EN = Locale("en", "Asia/Shanghai")


def _rendered(kind: MessageKind, item: dict[str, Any], locale: Locale) -> Iterator[tuple[str, str]]:
    templates = Templates(builtin_dir=TEMPLATES_DIR)
    n: Notification = replace(notification(kind, [item]), locale=locale)
    for name in templates.names():
        channel, _, rest = name.partition("/")
        template_kind, _, fmt = rest.partition(".")
        if template_kind == kind.value:
            # markdown's bold and escapes are not what is read: "**1** firing" reads "1 firing"
            yield name, re.sub(r"[*\\]", "", templates.render(channel, fmt, n))


@pytest.mark.parametrize("locale", [EN, ZH], ids=["en", "zh-CN"])
def test_the_alert_count_is_what_the_message_lists(locale: Locale) -> None:
    """Two GPU alerts fire, one of them silenced: the message lists the one told and says "1 firing"."""
    item = node_item(units=("2",))
    item["summary"] |= {"firing": 2, "eligible": 1, "muted": 1, "silenced": 1}
    for name, out in _rendered(MessageKind.FIRING, item, locale):
        if name.startswith("sms/"):
            continue  # one line: no count, no list
        counts = re.findall(r"(\d+) (?:条)?(?:firing|触发中)", out)
        assert counts == ["1"], f"{name}\n{out}"
        assert "GPU 2" in out
        assert "more alerts" not in out, f"{name}\n{out}"
        assert "另有" not in out, f"{name}\n{out}"
