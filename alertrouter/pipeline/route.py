"""The route tree: which receivers an alert goes to, and with which timing policy (Alertmanager's dispatch)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from types import MappingProxyType
from typing import Final

from alertrouter.durations import format_duration
from alertrouter.labels import Matcher, matches_all

__all__ = [
    "DEFAULT_POLICY",
    "NO_ESCALATION",
    "UNLIMITED",
    "Route",
    "RouteMatch",
    "RoutePolicy",
    "Unlimited",
    "match_routes",
    "render_tree",
    "severity_interval",
]

_ZERO = timedelta(0)


class Unlimited(enum.Enum):
    """Type of ``UNLIMITED``: on a ``Route``, ``max_repeats=None`` inherits and ``UNLIMITED`` lifts a cap."""

    UNLIMITED = "unlimited"


UNLIMITED: Final = Unlimited.UNLIMITED


def _frozen_intervals(intervals: Mapping[str, timedelta], where: str) -> Mapping[str, timedelta]:
    for severity, interval in intervals.items():
        if interval <= _ZERO:
            raise ValueError(f"{where}: repeat_interval for {severity!r} must be positive, not {interval}")
    # A private read-only copy: later changes to the caller's dict cannot reach a built tree.
    return MappingProxyType(dict(intervals))


def _check_timers(where: str, group_wait: timedelta | None, group_interval: timedelta | None) -> None:
    if group_wait is not None and group_wait < _ZERO:
        raise ValueError(f"{where}: group_wait must not be negative, not {group_wait}")
    if group_interval is not None and group_interval <= _ZERO:
        raise ValueError(f"{where}: group_interval must be positive, not {group_interval}")


@dataclass(frozen=True, slots=True)
class RoutePolicy:
    """What a route decides besides the receiver; unset fields inherit from the parent route.

    ``repeat_interval`` maps a severity to its interval and must hold a ``"default"`` key for
    the severities it does not name. Compares by value; not hashable (it holds a mapping).
    """

    repeat_interval: Mapping[str, timedelta]
    group_wait: timedelta
    group_interval: timedelta
    send_resolved: bool
    max_repeats: int | None  # None = unlimited

    def __post_init__(self) -> None:
        if "default" not in self.repeat_interval:
            raise ValueError('policy: repeat_interval needs a "default" entry for other severities')
        object.__setattr__(self, "repeat_interval", _frozen_intervals(self.repeat_interval, "policy"))
        _check_timers("policy", self.group_wait, self.group_interval)
        if self.max_repeats is not None and self.max_repeats < 0:
            raise ValueError(f"policy: max_repeats must not be negative, not {self.max_repeats}")


DEFAULT_POLICY: Final = RoutePolicy(
    repeat_interval={
        "critical": timedelta(minutes=10),
        "warning": timedelta(minutes=30),
        "info": timedelta(hours=2),
        "default": timedelta(hours=4),  # Alertmanager's own repeat_interval default
    },
    group_wait=timedelta(seconds=30),
    group_interval=timedelta(minutes=5),
    send_resolved=True,
    max_repeats=None,
)


@dataclass(frozen=True, slots=True)
class Route:
    """One node of the route tree. ``None`` in a setting means "inherit from the parent route".

    ``repeat_interval`` may be partial: it overrides only the severities it names.
    ``max_repeats``: ``None`` inherits, ``UNLIMITED`` removes an inherited cap, an int caps.
    ``path`` names the node in explanations and errors. A parent rewrites its children's paths
    from their positions (``route.routes[1].routes[0]``), so setting it on the root is enough
    for matching; pass it to a child too if that child's own validation errors should name it.
    Compares by value; not hashable.
    """

    receiver: str | None = None
    matchers: tuple[Matcher, ...] = ()
    continue_: bool = False
    routes: tuple[Route, ...] = ()
    repeat_interval: Mapping[str, timedelta] | None = None
    group_wait: timedelta | None = None
    group_interval: timedelta | None = None
    send_resolved: bool | None = None
    max_repeats: int | Unlimited | None = None
    path: str = "route"
    # Names of time intervals; like Alertmanager, a route's own, never inherited from its parent.
    mute_time_intervals: tuple[str, ...] = ()
    active_time_intervals: tuple[str, ...] = ()
    # An escalation policy's name, inherited like the receiver; NO_ESCALATION turns an inherited one off.
    escalation: str | None = None

    def __post_init__(self) -> None:
        if self.receiver == "":
            raise ValueError(f"{self.path}: receiver must be a name, or None to inherit the parent's")
        if self.repeat_interval is not None:
            object.__setattr__(self, "repeat_interval", _frozen_intervals(self.repeat_interval, self.path))
        _check_timers(self.path, self.group_wait, self.group_interval)
        if isinstance(self.max_repeats, int) and self.max_repeats < 0:
            raise ValueError(f"{self.path}: max_repeats must not be negative, not {self.max_repeats}")
        object.__setattr__(self, "matchers", tuple(self.matchers))
        object.__setattr__(self, "mute_time_intervals", tuple(self.mute_time_intervals))
        object.__setattr__(self, "active_time_intervals", tuple(self.active_time_intervals))
        children = []
        for index, child in enumerate(self.routes):
            where = f"{self.path}.routes[{index}]"
            # replace() runs the child's __post_init__ again, which re-paths its own children.
            children.append(child if child.path == where else replace(child, path=where))
        object.__setattr__(self, "routes", tuple(children))


@dataclass(frozen=True, slots=True)
class RouteMatch:
    """One place an alert is routed to: the receiver, the route that chose it, and its resolved policy."""

    receiver: str
    path: str
    policy: RoutePolicy
    mute_time_intervals: tuple[str, ...] = ()
    active_time_intervals: tuple[str, ...] = ()
    escalation: str | None = None  # the policy in force on this route (None: none)


NO_ESCALATION: Final = "none"


def _check_root(root: Route) -> None:
    # Alertmanager refuses these at config load; the root is the fallback for every alert.
    if root.receiver is None:
        raise ValueError(f"{root.path}: the root route must have a receiver")
    if root.matchers:
        raise ValueError(f"{root.path}: the root route must not have matchers (it matches every alert)")
    if root.mute_time_intervals or root.active_time_intervals:
        raise ValueError(f"{root.path}: the root route must not have mute_time_intervals or active_time_intervals")


def _overlay(policy: RoutePolicy, route: Route) -> RoutePolicy:
    """The policy of ``route``: its own settings over the one it inherits."""
    if (
        route.repeat_interval is None
        and route.group_wait is None
        and route.group_interval is None
        and route.send_resolved is None
        and route.max_repeats is None
    ):
        return policy  # the common case: nothing to allocate
    max_repeats = policy.max_repeats if route.max_repeats is None else route.max_repeats
    return RoutePolicy(
        repeat_interval={**policy.repeat_interval, **(route.repeat_interval or {})},
        group_wait=policy.group_wait if route.group_wait is None else route.group_wait,
        group_interval=policy.group_interval if route.group_interval is None else route.group_interval,
        send_resolved=policy.send_resolved if route.send_resolved is None else route.send_resolved,
        max_repeats=None if max_repeats is UNLIMITED else max_repeats,
    )


def _visit(
    route: Route,
    labels: Mapping[str, str],
    inherited: RoutePolicy,
    receiver: str,
    out: list[RouteMatch],
    escalation: str | None = None,
) -> bool:
    if not matches_all(route.matchers, labels):
        return False
    policy = _overlay(inherited, route)
    receiver = route.receiver or receiver
    if route.escalation is not None:
        escalation = None if route.escalation == NO_ESCALATION else route.escalation
    child_matched = False
    for child in route.routes:
        if _visit(child, labels, policy, receiver, out, escalation):
            child_matched = True
            if not child.continue_:
                break
    if not child_matched:
        out.append(
            RouteMatch(
                receiver=receiver,
                path=route.path,
                policy=policy,
                mute_time_intervals=route.mute_time_intervals,
                active_time_intervals=route.active_time_intervals,
                escalation=escalation,
            )
        )
    return True


def match_routes(root: Route, labels: Mapping[str, str], *, defaults: RoutePolicy = DEFAULT_POLICY) -> list[RouteMatch]:
    """Where an alert with ``labels`` goes, as Alertmanager's ``Route.Match`` decides.

    Depth-first, children in order. A matching child is descended into; after it the siblings
    are skipped unless it has ``continue_``. A node none of whose children matched is itself a
    match; the root matches every alert, so the list is never empty. The list is in match
    order, and a receiver reached by two branches appears twice, as in Alertmanager (which
    notifies it twice, once per route); deduplicate downstream if wanted. An absent label
    matches as ``""``. ``defaults`` is the policy the root inherits.
    """
    _check_root(root)
    out: list[RouteMatch] = []
    _visit(root, labels, defaults, root.receiver or "", out)
    return out


def severity_interval(policy: RoutePolicy, severity: str) -> timedelta:
    """The repeat interval for ``severity``; severities the policy does not name use ``"default"``."""
    interval = policy.repeat_interval.get(severity)
    return policy.repeat_interval["default"] if interval is None else interval


def _describe(route: Route, receiver: str, is_root: bool) -> str:
    parts = [route.path if is_root else "{" + ", ".join(str(m) for m in route.matchers) + "}"]
    if route.continue_:
        parts.append("continue: true")
    parts.append(f"receiver: {receiver}")
    if route.group_wait is not None:
        parts.append(f"group_wait: {format_duration(route.group_wait)}")
    if route.group_interval is not None:
        parts.append(f"group_interval: {format_duration(route.group_interval)}")
    if route.repeat_interval is not None:
        pairs = ", ".join(f"{sev}: {format_duration(iv)}" for sev, iv in route.repeat_interval.items())
        parts.append(f"repeat_interval: {{{pairs}}}")
    if route.send_resolved is not None:
        parts.append(f"send_resolved: {str(route.send_resolved).lower()}")
    if route.max_repeats is not None:
        parts.append(f"max_repeats: {'unlimited' if route.max_repeats is UNLIMITED else route.max_repeats}")
    if route.mute_time_intervals:
        parts.append(f"mute_time_intervals: [{', '.join(route.mute_time_intervals)}]")
    if route.active_time_intervals:
        parts.append(f"active_time_intervals: [{', '.join(route.active_time_intervals)}]")
    if route.escalation is not None:
        parts.append(f"escalation: {route.escalation}")
    return "  ".join(parts)


def _render(route: Route, receiver: str, prefix: str, lines: list[str]) -> None:
    for index, child in enumerate(route.routes):
        last = index == len(route.routes) - 1
        child_receiver = child.receiver or receiver
        lines.append(prefix + ("└── " if last else "├── ") + _describe(child, child_receiver, is_root=False))
        _render(child, child_receiver, prefix + ("    " if last else "│   "), lines)


def render_tree(root: Route) -> str:
    """The tree as text, like ``amtool config routes show``.

    One line per route: its matchers (``{}`` for a catch-all child; the root shows its path),
    ``continue: true`` when set, the effective receiver (inherited ones included, as amtool
    does), then only the settings the route itself sets. No trailing newline.
    """
    _check_root(root)
    lines = [_describe(root, root.receiver or "", is_root=True)]
    _render(root, root.receiver or "", "", lines)
    return "\n".join(lines)
