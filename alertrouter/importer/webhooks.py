"""Webhooks to the DingTalk, WeCom and Feishu relays Chinese teams put behind Alertmanager, as the robot
channels they post to: prometheus-webhook-dingtalk (`/dingtalk/<target>/send`, the robot's URL in the
relay's own config) and PrometheusAlert (`/prometheusalert?type=dd&ddurl=<robot URL>`, the robot in the
query). alertrouter posts to the robot itself; other webhooks are reported, as it has no generic one."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, parse_qsl, urlsplit

from alertrouter.importer.naming import Channels, env_name, shown_url
from alertrouter.importer.report import Report
from alertrouter.importer.source import Loc, SourceFile

__all__ = ["Integration", "webhook_channels"]

_DINGTALK_RELAY = re.compile(r"/dingtalk/([^/]+)/send/?")
_DINGTALK_ROBOT = "https://oapi.dingtalk.com/robot/send"
_WECOM_ROBOT = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send"
_FEISHU_HOOK = re.compile(r"(https://open\.(?:feishu\.cn|larksuite\.com)/open-apis/bot/v2/hook/)([^/?#]+)")


@dataclass
class Integration:
    """One `*_configs` entry being imported: where it is, whose it is, and where its results go."""

    src: SourceFile
    loc: Loc
    receiver: str
    report: Report
    channels: Channels

    @property
    def where(self) -> str:
        return f"receiver {self.receiver} ({self.src.name} line {self.src.line(self.loc)})"

    def dropped(self, cfg: dict[str, Any], keys: tuple[str, ...]) -> None:
        """Report the settings of `cfg` among `keys` that the channel it became has no use for."""
        if found := [key for key in keys if key in cfg]:
            self.report.changed.append(f"{self.where}: {', '.join(found)} not carried (no such channel setting)")


def _dingtalk(it: Integration, key: object, hint: str, token_from: str) -> str:
    def build(name: str) -> dict[str, Any]:
        return {
            "access_token": it.report.secret(
                env_name(name, "token"), f"access_token of the DingTalk robot {token_from}"
            ),
            "secret": it.report.secret(env_name(name, "secret"), "that robot's signing secret (SEC...), if it signs"),
        }

    name, _ = it.channels.add(key, "dingtalk", hint, build)
    return name


def _relay(it: Integration, url: str, target: str) -> list[Any]:
    parts = urlsplit(url)
    name = _dingtalk(
        it,
        ("dingtalk-relay", parts.netloc, target),
        target,
        f"of target {target} in prometheus-webhook-dingtalk's config",
    )
    it.report.changed.append(
        f"{it.where}: webhook to prometheus-webhook-dingtalk target {target} -> channel {name}, posting to the "
        "robot itself (set its token and secret from the relay's config; the relay's templates and mentions "
        "are not carried)"
    )
    return [name]


def _mobiles(query: dict[str, list[str]]) -> dict[str, Any]:
    mobiles = [m for value in query.get("at", []) for m in value.split(",") if m]
    return {"mentions": {"mobiles": mobiles}} if mobiles else {}


_PARAMS = {"dd": "ddurl", "wx": "wxurl", "fs": "fsurl"}  # PrometheusAlert's type -> the robot URL's parameter


def _robot(it: Integration, kind: str, url: str, index: int) -> str | None:
    """The channel of one robot URL of a PrometheusAlert webhook; None for one it cannot read."""
    hint = it.receiver if index == 0 else f"{it.receiver}-{index + 1}"
    source = f"in {it.where}'s PrometheusAlert {_PARAMS[kind]}"
    query = parse_qs(urlsplit(url).query)
    if kind == "dd":
        return _dingtalk(it, ("dingtalk", query.get("access_token", [""])[0]), hint, source)
    if kind == "wx":
        what = f"key of the WeCom robot {source}"

        def wecom(name: str) -> dict[str, Any]:
            return {"key": it.report.secret(env_name(name, "key"), what)}

        return it.channels.add(("wecom", query.get("key", [""])[0]), "wecom", hint, wecom)[0]
    found = _FEISHU_HOOK.match(url)
    if found is None:
        return None
    base, hook = found.group(1), found.group(2)

    def feishu(name: str) -> dict[str, Any]:
        return {
            "url": base,
            "hook": it.report.secret(env_name(name, "hook"), f"the id ending the Feishu bot URL {source}"),
        }

    return it.channels.add(("feishu", hook), "feishu", hint, feishu)[0]


def _prometheus_alert(it: Integration, url: str) -> list[Any] | None:
    """The robots of a PrometheusAlert URL (its robot parameter may list several, comma-separated); None
    for a message type alertrouter has no channel for (email, SMS, voice through PrometheusAlert)."""
    query = urlsplit(url).query
    pairs = dict(parse_qsl(query, keep_blank_values=True))
    kind = pairs.get("type", "")
    if kind not in _PARAMS:
        return None
    names = [
        _robot(it, kind, robot, i) for i, robot in enumerate(u for u in pairs.get(_PARAMS[kind], "").split(",") if u)
    ]
    if not names or None in names:
        return None
    mentions = _mobiles(parse_qs(query)) if kind == "dd" else {}
    refs: list[Any] = [{"channel": name, **mentions} if mentions else name for name in names]
    it.report.changed.append(
        f"{it.where}: webhook to PrometheusAlert (type={kind}) -> channel(s) {', '.join(map(str, names))}, posting to "
        f"the robot itself (PrometheusAlert's template {pairs.get('tpl', '')!r} is not used: alertrouter writes its "
        "own messages)"
    )
    return refs


def webhook_channels(it: Integration, cfg: dict[str, Any]) -> list[Any] | None:
    """The channel references for one `webhook_configs` entry; None (reported) when it maps to none."""
    url = cfg.get("url")
    if not isinstance(url, str) or not url:
        reason = "its URL is in a file (url_file)" if "url_file" in cfg else "it has no url"
        it.report.unmapped.append(f"{it.where}: a webhook is not mapped: {reason}")
        return None
    path = urlsplit(url).path
    refs: list[Any] | None = None
    if found := _DINGTALK_RELAY.fullmatch(path):
        refs = _relay(it, url, found.group(1))
    elif path.rstrip("/").endswith("/prometheusalert"):
        refs = _prometheus_alert(it, url)
    if refs is not None:
        it.dropped(cfg, ("max_alerts", "timeout"))
        return refs
    it.report.unmapped.append(
        f"{it.where}: webhook to {shown_url(url)} is not mapped: alertrouter has no generic webhook channel "
        "(the receiver is kept, so routes still reach it)"
    )
    return None
