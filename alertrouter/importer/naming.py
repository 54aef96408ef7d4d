"""Names the import gives: channels (one per robot or mail server, shared by the receivers that use it),
the environment variables their secrets are read from, and URLs as the report may show them."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from typing import Any
from urllib.parse import urlsplit

from alertrouter.model import NAME_MAX

__all__ = ["Channels", "env_name", "shown_url"]


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "x"


def env_name(channel: str, what: str) -> str:
    """`dingtalk-ops`, `TOKEN` -> `DINGTALK_OPS_TOKEN`."""
    return re.sub(r"[^A-Z0-9]+", "_", f"{channel}_{what}".upper()).strip("_")


def shown_url(url: str) -> str:
    """A URL without what may be a credential: user info, query and fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    hidden = " (query left out)" if parts.query else ""
    return f"{parts.scheme}://{host}{port}{parts.path}{hidden}"


class Channels:
    """The channels made so far: the same robot or mail server (by `key`) is one channel, whichever
    receivers name it, so alertrouter's per-robot rate limit covers all its messages."""

    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []
        self._by_key: dict[Hashable, str] = {}
        self._names: set[str] = set()

    def add(self, key: Hashable, kind: str, hint: str, build: Callable[[str], dict[str, Any]]) -> tuple[str, bool]:
        """(the channel's name, whether it is new); `build(name)` makes its config when it is."""
        if key in self._by_key:
            return self._by_key[key], False
        base = f"{kind}-{_slug(hint)}"[: NAME_MAX - 4]
        name, n = base, 2
        while name in self._names:
            name, n = f"{base}-{n}", n + 1
        self._names.add(name)
        self._by_key[key] = name
        self.items.append({"name": name, "type": kind, **build(name)})
        return name, True
