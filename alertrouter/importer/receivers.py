"""Alertmanager's receivers as alertrouter receivers of the same names, their integrations as channels.

Webhooks to DingTalk/WeCom/Feishu relays become robot channels (`importer.webhooks`), `email_configs`
email channels, `wechat_configs` WeCom robot channels; every other integration is reported, and its
receiver kept (with the channels it could map, or none) so that routing stays the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from alertrouter.importer.naming import Channels, env_name
from alertrouter.importer.report import Report
from alertrouter.importer.source import SourceFile
from alertrouter.importer.webhooks import Integration, webhook_channels

__all__ = ["Receivers", "convert_receivers"]

# Alertmanager's `send_resolved` default per integration alertrouter maps.
_SEND_RESOLVED = {"webhook_configs": True, "email_configs": False, "wechat_configs": False}


@dataclass
class Receivers:
    receivers: list[dict[str, Any]] = field(default_factory=list)
    channels: Channels = field(default_factory=Channels)
    send_resolved: dict[str, bool] = field(default_factory=dict)


def _text(it: Integration, cfg: dict[str, Any], key: str, default: Any = None) -> str | None:
    value = cfg.get(key, default)
    if value is not None and not isinstance(value, str):
        raise it.src.error((*it.loc, key), "must be text")
    return value


def _email(it: Integration, cfg: dict[str, Any], defaults: dict[str, Any]) -> list[Any] | None:
    to, sender = _text(it, cfg, "to"), _text(it, cfg, "from", defaults.get("smtp_from"))
    smarthost = _text(it, cfg, "smarthost", defaults.get("smtp_smarthost"))
    if not to or not sender or not smarthost:
        missing = "to" if not to else "from (or global.smtp_from)" if not sender else "smarthost"
        raise it.src.error(it.loc, f"an email config needs {missing}")
    if "{{" in to or "{{" in sender:
        it.report.unmapped.append(f"{it.where}: email whose to/from is a template is not mapped")
        return None
    host, _, port = smarthost.rpartition(":")
    require_tls = cfg.get("require_tls", defaults.get("smtp_require_tls", True))
    security = "tls" if port == "465" else "starttls" if require_tls else "none"
    username = _text(it, cfg, "auth_username", defaults.get("smtp_auth_username"))
    has_password = any(k in cfg or f"smtp_{k}" in defaults for k in ("auth_password", "auth_password_file"))

    def build(name: str) -> dict[str, Any]:
        channel: dict[str, Any] = {"host": host or smarthost, "security": security}
        if port.isdigit():
            channel["port"] = int(port)
        if username:
            channel["username"] = username
        if has_password:
            what = f"the SMTP password of {username or sender} on {smarthost} ({it.where})"
            channel["password"] = it.report.secret(env_name(name, "password"), what)
        return {**channel, "from": sender}

    name, _ = it.channels.add(("email", smarthost, sender, username, security), "email", it.receiver, build)
    it.report.mapped.append(f"{it.where}: email to {to} via {smarthost} -> channel {name}")
    it.dropped(cfg, ("auth_secret", "auth_identity", "hello", "tls_config", "headers", "threading"))
    return [{"channel": name, "to": [a.strip() for a in to.split(",") if a.strip()]}]


def _wechat(it: Integration, cfg: dict[str, Any], defaults: dict[str, Any]) -> list[Any]:
    corp = _text(it, cfg, "corp_id", defaults.get("wechat_api_corp_id")) or "?"
    agent = cfg.get("agent_id", "?")
    people = ", ".join(f"{k}={cfg[k]}" for k in ("to_user", "to_party", "to_tag") if cfg.get(k)) or "to_user=@all"
    what = f"key of a WeCom group robot for what {it.where} sent to {people}"
    key = ("wecom-app", corp, str(agent), people)
    name, _ = it.channels.add(key, "wecom", it.receiver, lambda n: {"key": it.report.secret(env_name(n, "key"), what)})
    it.report.changed.append(
        f"{it.where}: wechat_configs (WeCom application {agent} of corp {corp}, {people}) -> channel {name}, a "
        "WeCom group robot: alertrouter posts to a group, not to users through an application; add a robot "
        "to the group those people read (api_secret is not used and not written)"
    )
    it.dropped(cfg, ("message_type",))
    return [name]


def _integrations(src: SourceFile, i: int, node: dict[str, Any], out: Receivers, report: Report) -> list[Any]:
    name, refs, resolved = node["name"], [], set()
    defaults = src.data.get("global") or {}
    for key, items in node.items():
        if key == "name":
            continue
        if not key.endswith("_configs"):
            raise src.error(("receivers", i, key), f"unknown key {key!r} in a receiver")
        if not isinstance(items, list) or not all(isinstance(c, dict) for c in items):
            raise src.error(("receivers", i, key), "must be a list of mappings")
        if key not in _SEND_RESOLVED:
            kind = key.removesuffix("_configs")
            where = f"receiver {name} ({src.name} line {src.line(('receivers', i, key))})"
            report.unmapped.append(f"{where}: {len(items)} {kind} integration(s): alertrouter has no {kind} channel")
            continue
        for j, cfg in enumerate(items):
            it = Integration(src, ("receivers", i, key, j), name, report, out.channels)
            mapped = (
                webhook_channels(it, cfg)
                if key == "webhook_configs"
                else _email(it, cfg, defaults)
                if key == "email_configs"
                else _wechat(it, cfg, defaults)
            )
            if mapped is not None:
                refs += [r for r in mapped if r not in refs]
                resolved.add(bool(cfg.get("send_resolved", _SEND_RESOLVED[key])))
    if len(resolved) > 1:
        report.changed.append(
            f"receiver {name}: its integrations disagree on send_resolved; alertrouter sets it per route: "
            "resolved messages go to all its channels"
        )
    out.send_resolved[name] = resolved != {False}
    return refs


def convert_receivers(src: SourceFile, report: Report) -> Receivers:
    nodes = src.data.get("receivers")
    if not isinstance(nodes, list) or not nodes:
        raise src.error(("receivers",), "an Alertmanager config needs a list of receivers")
    out, first = Receivers(), dict[str, int]()
    for i, node in enumerate(nodes):
        if not isinstance(node, dict) or not isinstance(node.get("name"), str) or not node["name"]:
            raise src.error(("receivers", i), "a receiver must be a mapping with a name")
        name = node["name"]
        if name in first:
            raise src.error(
                ("receivers", i, "name"), f"receiver name {name!r} is not unique (first at line {first[name]})"
            )
        first[name] = src.line(("receivers", i))
        refs = _integrations(src, i, node, out, report)
        out.receivers.append({"name": name, "channels": refs} if refs else {"name": name})
    report.mapped.append(f"{len(out.receivers)} receiver(s) with the same names: {', '.join(first)}")
    return out
