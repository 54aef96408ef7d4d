"""Turn a validated `Ruleset` into the pipeline's objects, checking what spans sections.

Problems found here (an undefined receiver, two rules with one name, a route tree Alertmanager would
refuse) are reported with the file and path of the item that holds them, like schema problems.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, timedelta

from alertrouter.labels import Matcher, MatcherError, matchers_from_legacy
from alertrouter.pipeline.aggregate import AggregationRule, RollupRule
from alertrouter.pipeline.folding import FOLLOW_ON_RULE
from alertrouter.pipeline.inhibit import InhibitRule
from alertrouter.pipeline.nodes import NodeIdentity
from alertrouter.pipeline.route import NO_ESCALATION, UNLIMITED, Route
from alertrouter.pipeline.rules import CompiledRules
from alertrouter.pipeline.timeinterval import (
    TimeInterval,
    TimeSpec,
    parse_days_of_month,
    parse_location,
    parse_months,
    parse_time_range,
    parse_weekdays,
    parse_years,
)
from alertrouter.ruleset.check_oncall import check_oncall, escalation_policies
from alertrouter.ruleset.errors import ConfigError, ConfigProblem
from alertrouter.ruleset.gpu_triage import action_label, follow_on_rules
from alertrouter.ruleset.jobs import check_jobs
from alertrouter.ruleset.oncall import build_rota
from alertrouter.ruleset.routes import ALL_SEVERITIES, UNLIMITED_REPEATS, RouteConfig
from alertrouter.ruleset.schema import AggregationConfig, InhibitRuleConfig, Ruleset
from alertrouter.ruleset.stale import stale_rule
from alertrouter.ruleset.time_intervals import TimeIntervalConfig, TimeIntervalSpecConfig

__all__ = ["DEFAULT_RECEIVER", "compile_rules", "unconfigured_channels"]

DEFAULT_RECEIVER = "default"


class _Problems:
    def __init__(self, ruleset: Ruleset) -> None:
        self.ruleset = ruleset
        self.items: list[ConfigProblem] = []

    def add(self, section: str, index: int | None, subpath: str, message: str) -> None:
        file, path = self.ruleset.origin(section, index)
        self.items.append(ConfigProblem(file, path + subpath, message))


def _inhibit_names(cfgs: Sequence[InhibitRuleConfig]) -> list[str]:
    """One name per rule. Alertmanager's names are optional and need not be unique (it only logs a
    repeat); the engine reports which rule muted an alert, so a repeated name gets the rule's position, as
    does one named `gpu-follow-on`."""
    taken: set[str] = {FOLLOW_ON_RULE}  # the folding of follow-on Xids reports this name (`pipeline.folding`)
    names: list[str] = []
    for i, cfg in enumerate(cfgs):
        name = cfg.name or f"inhibit_rules[{i}]"
        if name in taken:
            name = f"{name} (inhibit_rules[{i}])"
        taken.add(name)
        names.append(name)
    return names


def _inhibit_rule(i: int, cfg: InhibitRuleConfig, name: str, problems: _Problems) -> InhibitRule | None:
    """A side without matchers matches every alert, as in Alertmanager (which accepts such rules)."""
    legacy: dict[str, list[Matcher]] = {}
    for key, match, match_re in (
        ("source_match", cfg.source_match, None),
        ("source_match_re", None, cfg.source_match_re),
        ("target_match", cfg.target_match, None),
        ("target_match_re", None, cfg.target_match_re),
    ):
        try:
            legacy[key] = matchers_from_legacy(match, match_re)
        except MatcherError as exc:
            problems.add("inhibit_rules", i, f".{key}", str(exc))
    if len(legacy) < 4:
        return None
    source = [*cfg.source_matchers, *legacy["source_match"], *legacy["source_match_re"]]
    target = [*cfg.target_matchers, *legacy["target_match"], *legacy["target_match_re"]]
    return InhibitRule(
        name=name,
        source=tuple(source),
        target=tuple(target),
        equal=tuple(cfg.equal),
        hold_down=cfg.hold_down,
    )


def _aggregation_rule(cfg: AggregationConfig) -> AggregationRule:
    rollup = None
    if cfg.rollup is not None:
        r = cfg.rollup
        rollup = RollupRule(threshold=r.threshold, window=r.window, by=tuple(r.by), scope_labels=tuple(r.scope_labels))
    return AggregationRule(
        name=cfg.name,
        matchers=tuple(cfg.matchers),
        group_by=tuple(cfg.group_by),
        unit_label=cfg.count.label if cfg.count else None,
        units_per_group=cfg.count.per_group if cfg.count else None,
        unit_name=cfg.count.name if cfg.count else "GPUs",
        group_wait=cfg.group_wait,
        group_interval=cfg.group_interval,
        rollup=rollup,
    )


def _intervals(cfg: RouteConfig, severities: Sequence[str]) -> dict[str, timedelta] | None:
    if cfg.repeat_interval is None:
        return None
    out = dict(cfg.repeat_interval)
    every = out.pop(ALL_SEVERITIES, None)
    if every is not None:
        out = {name: every for name in (*severities, "default")} | out
    return out


def _spec(cfg: TimeIntervalSpecConfig) -> TimeSpec:
    """The schema has checked every entry; this only converts them."""
    return TimeSpec(
        times=None if cfg.times is None else tuple(parse_time_range(t.start_time, t.end_time) for t in cfg.times),
        weekdays=None if cfg.weekdays is None else tuple(parse_weekdays(w) for w in cfg.weekdays),
        days_of_month=None if cfg.days_of_month is None else tuple(parse_days_of_month(d) for d in cfg.days_of_month),
        months=None if cfg.months is None else tuple(parse_months(m) for m in cfg.months),
        years=None if cfg.years is None else tuple(parse_years(y) for y in cfg.years),
        location=UTC if cfg.location is None else parse_location(cfg.location),
    )


def _time_intervals(ruleset: Ruleset, problems: _Problems) -> dict[str, TimeInterval]:
    """Named intervals from `time_intervals` and the deprecated `mute_time_intervals` (both read, as
    Alertmanager does); a name may be defined once across the two."""
    out: dict[str, TimeInterval] = {}
    where: dict[str, tuple[str, int]] = {}
    named: list[tuple[str, int, TimeIntervalConfig]] = [
        *(("mute_time_intervals", i, c) for i, c in enumerate(ruleset.mute_time_intervals)),
        *(("time_intervals", i, c) for i, c in enumerate(ruleset.time_intervals)),
    ]
    for section, i, cfg in named:
        if cfg.name in where:
            file, path = ruleset.origin(*where[cfg.name])
            problems.add(section, i, ".name", f"time interval {cfg.name!r} is not unique (first at {file}:{path})")
            continue
        where[cfg.name] = (section, i)
        out[cfg.name] = TimeInterval(cfg.name, tuple(_spec(spec) for spec in cfg.time_intervals))
    return out


def _check_interval_names(cfg: RouteConfig, path: str, problems: _Problems, intervals: Collection[str]) -> None:
    sub = path[len("route") :]
    for key, names in (
        ("mute_time_intervals", cfg.mute_time_intervals),
        ("active_time_intervals", cfg.active_time_intervals),
    ):
        for j, name in enumerate(names):
            if name not in intervals:
                known = ", ".join(sorted(intervals)) or "none defined"
                problems.add(
                    "route",
                    None,
                    f"{sub}.{key}[{j}]",
                    f"undefined time interval {name!r} used in route (known: {known})",
                )


def _route(
    cfg: RouteConfig,
    path: str,
    problems: _Problems,
    receivers: set[str],
    severities: Sequence[str],
    intervals: Collection[str],
    policies: Collection[str] = (),
) -> Route:
    if cfg.receiver is not None and cfg.receiver not in receivers:
        problems.add("route", None, path[len("route") :] + ".receiver", f"undefined receiver {cfg.receiver!r}")
    if cfg.escalation is not None and cfg.escalation != NO_ESCALATION and cfg.escalation not in policies:
        known = ", ".join(sorted(policies)) or "none defined in oncall.escalations"
        problems.add(
            "route",
            None,
            path[len("route") :] + ".escalation",
            f"undefined escalation policy {cfg.escalation!r} (known: {known})",
        )
    _check_interval_names(cfg, path, problems, intervals)
    try:
        matchers = [*cfg.matchers, *matchers_from_legacy(cfg.match, cfg.match_re)]
    except MatcherError as exc:
        problems.add("route", None, path[len("route") :], str(exc))
        matchers = []
    return Route(
        receiver=cfg.receiver,
        matchers=tuple(matchers),
        continue_=cfg.continue_,
        routes=tuple(
            _route(child, f"{path}.routes[{i}]", problems, receivers, severities, intervals, policies)
            for i, child in enumerate(cfg.routes)
        ),
        repeat_interval=_intervals(cfg, severities),
        group_wait=cfg.group_wait,
        group_interval=cfg.group_interval,
        send_resolved=cfg.send_resolved,
        max_repeats=UNLIMITED if cfg.max_repeats == UNLIMITED_REPEATS else cfg.max_repeats,
        path=path,
        mute_time_intervals=tuple(cfg.mute_time_intervals),
        active_time_intervals=tuple(cfg.active_time_intervals),
        escalation=cfg.escalation,
    )


def _unique(names: Sequence[str | None], section: str, problems: _Problems) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name is None:
            continue
        if name in seen:
            file, path = problems.ruleset.origin(section, seen[name])
            problems.add(section, i, ".name", f"duplicate name {name!r} (first at {file}:{path})")
        else:
            seen[name] = i


_CHAT = ("dingtalk", "wecom", "feishu")


def _check_channels(ruleset: Ruleset, problems: _Problems) -> None:
    """Receivers name defined channels, with what each channel type needs; failovers are sound.
    Recipients of an unconfigured channel may be empty (`${ONCALL_PHONE:-}` in the shipped rules)."""
    _unique([c.name for c in ruleset.channels], "channels", problems)
    unconfigured = unconfigured_channels(ruleset)
    channels = {c.name: c for c in ruleset.channels}
    for i, cfg in enumerate(ruleset.channels):
        if cfg.failover is None:
            continue
        other = channels.get(cfg.failover)
        if other is None:
            problems.add("channels", i, ".failover", f"undefined channel {cfg.failover!r}")
        elif other.name == cfg.name:
            problems.add("channels", i, ".failover", "a channel cannot fail over to itself")
        elif other.type != cfg.type:
            problems.add("channels", i, ".failover", f"fails over to a {other.type} channel; must be {cfg.type}")
    for i, receiver in enumerate(ruleset.receivers):
        for j, ref in enumerate(receiver.channels):
            where = f".channels[{j}]"
            channel = channels.get(ref.channel)
            if channel is None:
                problems.add("receivers", i, where + ".channel", f"undefined channel {ref.channel!r}")
                continue
            mentions = ref.mentions
            if channel.type not in _CHAT and (mentions.mobiles or mentions.user_ids or mentions.all or mentions.oncall):
                problems.add("receivers", i, where + ".mentions", f"mentions apply to chat robots, not {channel.type}")
            if channel.name in unconfigured:
                continue
            if channel.type == "sms" and not [n for n in ref.to if n] and not ref.oncall:
                problems.add("receivers", i, where + ".to", "an SMS channel needs the phone numbers to send to")
            if channel.type == "voice" and not ([n for n in ref.to if n] or ref.oncall):
                problems.add(
                    "receivers", i, where + ".to", "a voice channel needs the phone numbers to call, or `oncall:`"
                )
            if channel.type == "email" and not (ref.to or channel.to or ref.oncall):
                problems.add("receivers", i, where + ".to", "no recipients here nor in the email channel's `to`")
            if channel.type in _CHAT and ref.to:
                problems.add("receivers", i, where + ".to", "chat robots post to their group; use mentions")
            if channel.type in _CHAT and ref.oncall:
                problems.add(
                    "receivers", i, where + ".oncall", "chat robots post to their group; use mentions: {oncall: [...]}"
                )


def _check_digests(ruleset: Ruleset, problems: _Problems) -> None:
    """A receiver's digest names a defined email channel, and has recipients unless that is unconfigured."""
    channels = {c.name: c for c in ruleset.channels}
    unconfigured = unconfigured_channels(ruleset)
    for i, receiver in enumerate(ruleset.receivers):
        digest = receiver.digest
        if digest is None:
            continue
        channel = channels.get(digest.channel)
        if channel is None:
            problems.add("receivers", i, ".digest.channel", f"undefined channel {digest.channel!r}")
        elif channel.type != "email":
            where = ".digest.channel"
            problems.add("receivers", i, where, f"{channel.name} is a {channel.type} channel; must be email")
        elif channel.name not in unconfigured and not (digest.to or channel.to):
            problems.add("receivers", i, ".digest.to", "no recipients here nor in the email channel's `to`")


def unconfigured_channels(ruleset: Ruleset) -> dict[str, list[str]]:
    """Channels whose credentials are empty (e.g. `${DINGTALK_TOKEN:-}` with the variable unset): valid
    rules for a deployment that does not use them; their messages are recorded, not sent."""
    return {c.name: missing for c in ruleset.channels if (missing := c.missing_credentials())}


def _root_route(ruleset: Ruleset, receivers: set[str], problems: _Problems) -> RouteConfig:
    """The root route as configured (the default receiver's when there is none, added to `receivers`),
    its own problems noted: it takes no matchers and no time intervals, and needs a receiver."""
    if ruleset.route is None:
        receivers.add(DEFAULT_RECEIVER)
        return RouteConfig(receiver=DEFAULT_RECEIVER)
    route_cfg = ruleset.route
    if route_cfg.receiver is None:
        problems.add("route", None, ".receiver", "the root route needs a receiver")
    if route_cfg.matchers or route_cfg.match or route_cfg.match_re:
        problems.add("route", None, ".matchers", "the root route matches every alert and takes no matchers")
    for key in ("mute_time_intervals", "active_time_intervals"):
        if getattr(route_cfg, key):
            problems.add("route", None, f".{key}", f"the root route must not have any {key.replace('_', ' ')}")
    return route_cfg


def compile_rules(ruleset: Ruleset) -> CompiledRules:
    problems = _Problems(ruleset)
    _check_channels(ruleset, problems)
    _check_digests(ruleset, problems)
    g = ruleset.global_
    _unique([a.name for a in ruleset.aggregation], "aggregation", problems)
    _unique([r.name for r in ruleset.receivers], "receivers", problems)
    _unique([h.name for h in ruleset.heartbeats], "heartbeats", problems)

    receivers = {r.name for r in ruleset.receivers}
    route_cfg = _root_route(ruleset, receivers, problems)
    intervals = _time_intervals(ruleset, problems)
    for problem in [*check_oncall(ruleset, receivers), *check_jobs(ruleset.jobs, receivers, g.severities)]:
        problems.add(*problem)
    policies = escalation_policies(ruleset.oncall)
    route = Route(receiver=DEFAULT_RECEIVER)
    if route_cfg.receiver is not None:
        try:
            # The root's own intervals were reported above; the tree is built without them.
            route_cfg = route_cfg.model_copy(update={"mute_time_intervals": [], "active_time_intervals": []})
            route = _route(route_cfg, "route", problems, receivers, g.severities, intervals, policies)
        except ValueError as exc:  # the tree's own checks (e.g. a zero repeat interval) name the route
            problems.add("route", None, "", str(exc))
    inhibit = [
        _inhibit_rule(i, cfg, name, problems)
        for i, (cfg, name) in enumerate(zip(ruleset.inhibit_rules, _inhibit_names(ruleset.inhibit_rules), strict=True))
    ]
    if problems.items:
        raise ConfigError(problems.items)
    return CompiledRules(
        nodes=NodeIdentity(
            sources=tuple(g.node_labels),
            label=g.node_label,
            topology=ruleset.topology.nodes,
            aliases=ruleset.topology.aliases,
            learned_ttl=ruleset.topology.learned_alias_ttl,
            derive=action_label(ruleset.gpu_triage),
        ),
        inhibit_rules=tuple(r for r in inhibit if r is not None),
        aggregation=tuple(_aggregation_rule(a) for a in ruleset.aggregation),
        route=route,
        receivers=tuple(sorted(receivers)),
        severity_label=g.severity_label,
        severities=tuple(g.severities),
        time_intervals=intervals,
        escalations=policies,
        rota=build_rota(ruleset.oncall),
        stale=stale_rule(ruleset.stale),
        follow_ons=follow_on_rules(ruleset.gpu_triage),
    )
