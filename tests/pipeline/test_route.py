"""Tests for alertrouter.pipeline.route: the route tree, policy inheritance and the tree rendering.

Expected receivers are written by hand from Alertmanager's dispatch semantics (prometheus/alertmanager
dispatch/route.go, route_test.go), then every table row is replayed through the real
`amtool config routes test` (Alertmanager 0.25) on an equivalent alertmanager.yml.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Callable, Mapping
from datetime import timedelta
from pathlib import Path

import pytest
import yaml

from alertrouter.durations import format_duration
from alertrouter.labels import Matcher, MatchType, matchers_from_legacy, parse_matchers
from alertrouter.pipeline.route import (
    DEFAULT_POLICY,
    UNLIMITED,
    Route,
    RoutePolicy,
    match_routes,
    render_tree,
    severity_interval,
)
from support.need import need

MIN, HOUR, SEC = timedelta(minutes=1), timedelta(hours=1), timedelta(seconds=1)


def m(text: str) -> tuple[Matcher, ...]:
    return tuple(parse_matchers(text))


# --- the trees -------------------------------------------------------------------------------

# The shipped GPU routing: by severity, then by region; storage gets a copy of everything it owns.
GPU_TREE = Route(
    receiver="weekly-digest",
    routes=(
        Route(matchers=m('team="storage"'), receiver="storage-team", continue_=True),
        Route(
            matchers=m('severity="critical"'),
            receiver="oncall-core",
            group_wait=10 * SEC,
            repeat_interval={"critical": 5 * MIN},
            routes=(
                Route(matchers=m('region="north"'), receiver="critical-north"),
                Route(matchers=m('region="south"'), receiver="critical-south"),
            ),
        ),
        Route(
            matchers=m('severity="warning"'),
            receiver="ops",
            routes=(
                Route(matchers=m('region="north"'), receiver="ops-north"),
                Route(matchers=m('region="south"'), receiver="ops-south"),
            ),
        ),
        Route(matchers=m('severity="info"'), receiver="weekly-digest", send_resolved=False),
    ),
)

CONTINUE_TREE = Route(
    receiver="a",
    routes=(
        Route(matchers=m('x="1"'), receiver="b", continue_=True),
        Route(
            matchers=m('w="1"'),
            receiver="e",
            continue_=True,
            routes=(
                Route(matchers=m('v="1"'), receiver="f", continue_=True),
                Route(matchers=m('v=~".+"'), receiver="g"),
                Route(matchers=m('u="1"')),  # no receiver: inherits e
            ),
        ),
        Route(matchers=m('y="1"'), receiver="c"),
        Route(matchers=m('z="1"'), receiver="b"),  # b again, via a second branch
        Route(matchers=m('x="1"'), receiver="d"),
    ),
)

MATCHER_TREE = Route(
    receiver="default",
    routes=(
        Route(matchers=m('alertname=~"DCGM_FI_DEV_.*_TEMP"'), receiver="temperature"),
        Route(matchers=m('severity="critical", region!="north"'), receiver="not-north"),
        Route(matchers=m('severity="warning", node=""'), receiver="no-node"),
        Route(matchers=m('severity="warning", node!=""'), receiver="has-node"),
        Route(matchers=m('severity=~"crit|warn"'), receiver="crit-or-warn"),
        Route(matchers=m(r'severity="info", instance!~"10\\.0\\..*"'), receiver="outside-10-0"),
        Route(matchers=tuple(matchers_from_legacy({"job": "dcgm"}, {"gpu": "[0-7]"})), receiver="dcgm-legacy"),
        Route(matchers=m('hostname=~"(?i)GPU-NODE-.*"'), receiver="case-insensitive"),
    ),
)

TREES = {"gpu": GPU_TREE, "continue": CONTINUE_TREE, "matchers": MATCHER_TREE}

# (tree, labels, expected receivers in order)
CASES: list[tuple[str, dict[str, str], list[str]]] = [
    ("gpu", {"severity": "critical", "region": "north"}, ["critical-north"]),
    ("gpu", {"severity": "critical", "region": "south"}, ["critical-south"]),
    ("gpu", {"severity": "critical", "region": "east"}, ["oncall-core"]),
    ("gpu", {"severity": "critical"}, ["oncall-core"]),
    ("gpu", {"severity": "warning", "region": "north"}, ["ops-north"]),
    ("gpu", {"severity": "warning", "region": "south"}, ["ops-south"]),
    ("gpu", {"severity": "warning", "region": "east"}, ["ops"]),
    ("gpu", {"severity": "info", "region": "north"}, ["weekly-digest"]),
    ("gpu", {"alertname": "NodeDown"}, ["weekly-digest"]),
    ("gpu", {"severity": "page"}, ["weekly-digest"]),
    ("gpu", {"severity": "Critical", "region": "north"}, ["weekly-digest"]),
    ("gpu", {"region": "north"}, ["weekly-digest"]),
    ("gpu", {"team": "storage", "severity": "critical", "region": "north"}, ["storage-team", "critical-north"]),
    ("gpu", {"team": "storage", "severity": "info"}, ["storage-team", "weekly-digest"]),
    # A matched continue-route counts as a match: the root's own receiver is not added.
    ("gpu", {"team": "storage"}, ["storage-team"]),
    ("gpu", {"team": "Storage", "severity": "warning"}, ["ops"]),
    ("continue", {}, ["a"]),
    ("continue", {"x": "1"}, ["b", "d"]),
    ("continue", {"x": "1", "y": "1"}, ["b", "c"]),
    ("continue", {"x": "1", "z": "1"}, ["b", "b"]),
    ("continue", {"y": "1", "z": "1"}, ["c"]),
    ("continue", {"z": "1"}, ["b"]),
    ("continue", {"w": "1"}, ["e"]),
    ("continue", {"w": "1", "v": "1"}, ["f", "g"]),
    ("continue", {"w": "1", "v": "2"}, ["g"]),
    ("continue", {"w": "1", "u": "1"}, ["e"]),
    ("continue", {"w": "1", "v": "1", "x": "1"}, ["b", "f", "g", "d"]),
    ("continue", {"w": "1", "y": "1"}, ["e", "c"]),
    ("matchers", {"alertname": "DCGM_FI_DEV_GPU_TEMP"}, ["temperature"]),
    ("matchers", {"alertname": "DCGM_FI_DEV_GPU_TEMP_HIGH"}, ["default"]),
    ("matchers", {"alertname": "XDCGM_FI_DEV_GPU_TEMP"}, ["default"]),
    ("matchers", {"severity": "critical"}, ["not-north"]),
    ("matchers", {"severity": "critical", "region": "north"}, ["default"]),
    ("matchers", {"severity": "crit", "region": "north"}, ["crit-or-warn"]),
    ("matchers", {"severity": "warning"}, ["no-node"]),
    ("matchers", {"severity": "warning", "node": ""}, ["no-node"]),
    ("matchers", {"severity": "warning", "node": "gpu-node-07"}, ["has-node"]),
    ("matchers", {"severity": "info", "instance": "10.0.0.7:9100"}, ["default"]),
    ("matchers", {"severity": "info", "instance": "10.1.0.7:9100"}, ["outside-10-0"]),
    ("matchers", {"severity": "info"}, ["outside-10-0"]),
    ("matchers", {"job": "dcgm", "gpu": "3"}, ["dcgm-legacy"]),
    ("matchers", {"job": "dcgm", "gpu": "13"}, ["default"]),
    ("matchers", {"hostname": "gpu-node-07"}, ["case-insensitive"]),
]


def _case_id(case: tuple[str, dict[str, str], list[str]]) -> str:
    tree, labels, _ = case
    return f"{tree}:" + (",".join(f"{k}={v}" for k, v in labels.items()) or "none")


@pytest.mark.parametrize(("tree", "labels", "expected"), CASES, ids=[_case_id(c) for c in CASES])
def test_match_routes_receivers(tree: str, labels: dict[str, str], expected: list[str]) -> None:
    assert [match.receiver for match in match_routes(TREES[tree], labels)] == expected


# --- the real Alertmanager agrees ------------------------------------------------------------


def _am_route(route: Route) -> dict[str, object]:
    node: dict[str, object] = {}
    if route.receiver is not None:
        node["receiver"] = route.receiver
    if route.matchers:
        node["matchers"] = [str(matcher) for matcher in route.matchers]
    if route.continue_:
        node["continue"] = True
    if route.group_wait is not None:
        node["group_wait"] = format_duration(route.group_wait)
    if route.routes:
        node["routes"] = [_am_route(child) for child in route.routes]
    return node


def _receivers(route: Route) -> set[str]:
    names = {route.receiver} if route.receiver else set()
    for child in route.routes:
        names |= _receivers(child)
    return names


def _write_alertmanager_yml(root: Route, path: Path) -> Path:
    config = {
        "route": _am_route(root),
        "receivers": [
            {"name": name, "webhook_configs": [{"url": "http://127.0.0.1:9/"}]} for name in sorted(_receivers(root))
        ],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _amtool(*args: str) -> subprocess.CompletedProcess[str]:
    amtool = shutil.which("amtool")
    need(amtool is not None, "amtool not installed (apt-get install prometheus-alertmanager)")
    assert amtool is not None
    return subprocess.run([amtool, *args], capture_output=True, text=True, timeout=30, check=False)


@pytest.fixture(scope="module")
def am_configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("alertmanager")
    return {name: _write_alertmanager_yml(tree, base / f"{name}.yml") for name, tree in TREES.items()}


@pytest.mark.alertmanager
@pytest.mark.parametrize(("tree", "labels", "expected"), CASES, ids=[_case_id(c) for c in CASES])
def test_amtool_routes_test_agrees(
    am_configs: dict[str, Path], tree: str, labels: dict[str, str], expected: list[str]
) -> None:
    args = [str(Matcher(name, MatchType.EQ, value)) for name, value in labels.items()]
    result = _amtool("config", "routes", "test", f"--config.file={am_configs[tree]}", *args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().split(",") == expected
    assert [match.receiver for match in match_routes(TREES[tree], labels)] == expected


@pytest.mark.alertmanager
def test_render_tree_has_amtool_shape(am_configs: dict[str, Path]) -> None:
    result = _amtool("config", "routes", "show", f"--config.file={am_configs['gpu']}")
    assert result.returncode == 0, result.stderr
    # amtool: "Routing tree:", ".", then the root as "└── default-route ..." with children indented 4 more;
    # its "│" continuation lines are padded with no-break spaces.
    theirs = [line[4:].replace("\xa0", " ") for line in result.stdout.rstrip("\n").splitlines()[3:]]
    ours = render_tree(GPU_TREE).splitlines()[1:]
    upto_receiver = re.compile(r"^.*?receiver: \S+")

    def cut(line: str) -> str:
        found = upto_receiver.match(line)
        assert found is not None, line
        return found.group(0)

    assert [cut(line) for line in ours] == [cut(line) for line in theirs]
    assert len(ours) == 8


@pytest.mark.alertmanager
def test_amtool_also_rejects_a_root_without_receiver(tmp_path: Path) -> None:
    path = tmp_path / "alertmanager.yml"
    path.write_text(yaml.safe_dump({"route": {"routes": [{"receiver": "x"}]}, "receivers": [{"name": "x"}]}))
    assert _amtool("check-config", str(path)).returncode != 0
    with pytest.raises(ValueError, match="must have a receiver"):
        match_routes(Route(routes=(Route(receiver="x"),)), {})


# --- paths and match order -------------------------------------------------------------------


def test_match_paths_name_the_matching_routes() -> None:
    labels = {"team": "storage", "severity": "warning", "region": "south"}
    assert [(r.receiver, r.path) for r in match_routes(GPU_TREE, labels)] == [
        ("storage-team", "route.routes[0]"),
        ("ops-south", "route.routes[2].routes[1]"),
    ]
    assert [r.path for r in match_routes(GPU_TREE, {})] == ["route"]


def test_child_paths_follow_the_root_path_and_position() -> None:
    leaf = Route(receiver="r", path="somewhere.else")
    tree = Route(receiver="root", path="rules/gpu.yml:route", routes=(Route(), Route(routes=(leaf,))))
    assert tree.routes[1].routes[0].path == "rules/gpu.yml:route.routes[1].routes[0]"
    assert match_routes(tree, {})[0].path == "rules/gpu.yml:route.routes[0]"


def test_empty_label_value_is_absent() -> None:
    tree = Route(receiver="root", routes=(Route(matchers=m('region=""'), receiver="no-region"),))
    assert [r.receiver for r in match_routes(tree, {"region": ""})] == ["no-region"]
    assert [r.receiver for r in match_routes(tree, {})] == ["no-region"]
    assert [r.receiver for r in match_routes(tree, {"region": "north"})] == ["root"]


# --- policy inheritance ----------------------------------------------------------------------

# field, value set on route.routes[0], value set on route.routes[0].routes[1]
FIELDS: list[tuple[str, object, object]] = [
    ("group_wait", 1 * MIN, 5 * SEC),
    ("group_interval", 10 * MIN, 1 * MIN),
    ("send_resolved", False, True),
    ("max_repeats", 3, 0),
]


@pytest.mark.parametrize(("field", "outer", "inner"), FIELDS, ids=[f[0] for f in FIELDS])
def test_each_setting_inherits_down_the_tree(field: str, outer: object, inner: object) -> None:
    tree = Route(
        receiver="root",
        routes=(
            Route(
                matchers=m('a="1"'),
                routes=(Route(matchers=m('b="1"')), Route(matchers=m('b="2"'), **{field: inner})),  # type: ignore[arg-type]
                **{field: outer},  # type: ignore[arg-type]
            ),
            Route(matchers=m('a="2"')),
        ),
    )

    def setting(labels: Mapping[str, str]) -> object:
        (match,) = match_routes(tree, labels)
        return getattr(match.policy, field)

    assert setting({"a": "1"}) == outer
    assert setting({"a": "1", "b": "1"}) == outer
    assert setting({"a": "1", "b": "2"}) == inner
    assert setting({"a": "2"}) == getattr(DEFAULT_POLICY, field)
    assert setting({}) == getattr(DEFAULT_POLICY, field)


def test_partial_repeat_interval_overrides_only_the_severities_it_names() -> None:
    tree = Route(
        receiver="root",
        repeat_interval={"default": 12 * HOUR},
        routes=(
            Route(
                matchers=m('team="gpu"'),
                repeat_interval={"critical": 5 * MIN},
                routes=(Route(matchers=m('region="north"'), repeat_interval={"warning": 1 * HOUR}),),
            ),
        ),
    )
    (leaf,) = match_routes(tree, {"team": "gpu", "region": "north"})
    assert dict(leaf.policy.repeat_interval) == {
        "critical": 5 * MIN,
        "warning": 1 * HOUR,
        "info": 2 * HOUR,
        "default": 12 * HOUR,
    }
    (middle,) = match_routes(tree, {"team": "gpu"})
    assert severity_interval(middle.policy, "critical") == 5 * MIN
    assert severity_interval(middle.policy, "warning") == 30 * MIN
    assert severity_interval(middle.policy, "page") == 12 * HOUR
    (root,) = match_routes(tree, {})
    assert severity_interval(root.policy, "critical") == 10 * MIN


@pytest.mark.parametrize(
    ("severity", "expected"),
    [("critical", 10 * MIN), ("warning", 30 * MIN), ("info", 2 * HOUR), ("page", 4 * HOUR), ("", 4 * HOUR)],
)
def test_default_policy_intervals(severity: str, expected: timedelta) -> None:
    assert severity_interval(DEFAULT_POLICY, severity) == expected


def test_default_policy_values() -> None:
    assert DEFAULT_POLICY.group_wait == 30 * SEC
    assert DEFAULT_POLICY.group_interval == 5 * MIN
    assert DEFAULT_POLICY.send_resolved is True
    assert DEFAULT_POLICY.max_repeats is None


def test_unlimited_lifts_an_inherited_cap_and_none_inherits_it() -> None:
    tree = Route(
        receiver="root",
        max_repeats=3,
        routes=(
            Route(matchers=m('a="1"'), max_repeats=UNLIMITED, routes=(Route(matchers=m('b="1"')),)),
            Route(matchers=m('a="2"')),
        ),
    )
    assert [r.policy.max_repeats for r in match_routes(tree, {"a": "1", "b": "1"})] == [None]
    assert [r.policy.max_repeats for r in match_routes(tree, {"a": "1"})] == [None]
    assert [r.policy.max_repeats for r in match_routes(tree, {"a": "2"})] == [3]


def test_gpu_tree_policies() -> None:
    north, south = match_routes(GPU_TREE, {"severity": "critical", "region": "north", "team": "storage"})[::-1]
    assert north.receiver == "critical-north"
    assert north.policy.group_wait == 10 * SEC
    assert severity_interval(north.policy, "critical") == 5 * MIN
    assert south.receiver == "storage-team"
    assert south.policy == DEFAULT_POLICY
    (info,) = match_routes(GPU_TREE, {"severity": "info"})
    assert info.policy.send_resolved is False


def test_defaults_are_what_the_root_inherits() -> None:
    defaults = RoutePolicy(
        repeat_interval={"default": 1 * HOUR},
        group_wait=0 * SEC,
        group_interval=1 * MIN,
        send_resolved=False,
        max_repeats=5,
    )
    (match,) = match_routes(GPU_TREE, {"severity": "warning"}, defaults=defaults)
    assert match.policy == defaults
    assert severity_interval(match.policy, "critical") == 1 * HOUR


def test_a_built_tree_does_not_see_later_changes_to_its_inputs() -> None:
    intervals = {"critical": 5 * MIN}
    tree = Route(receiver="root", repeat_interval=intervals)
    intervals["critical"] = 1 * HOUR
    (match,) = match_routes(tree, {})
    assert severity_interval(match.policy, "critical") == 5 * MIN


# --- invalid trees ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: match_routes(Route(), {}), "route: the root route must have a receiver"),
        (lambda: match_routes(Route(receiver="r", matchers=m("a=1")), {}), "must not have matchers"),
        (lambda: render_tree(Route(routes=(Route(receiver="x"),))), "must have a receiver"),
        (lambda: Route(receiver=""), "receiver must be a name"),
        (lambda: Route(group_interval=0 * SEC, path="route.routes[0]"), r"route\.routes\[0\]: group_interval"),
        (lambda: Route(group_wait=-1 * SEC), "group_wait must not be negative"),
        (lambda: Route(repeat_interval={"info": 0 * SEC}), "repeat_interval for 'info' must be positive"),
        (lambda: Route(max_repeats=-1), "max_repeats must not be negative"),
        (
            lambda: RoutePolicy(
                {"critical": MIN}, group_wait=SEC, group_interval=MIN, send_resolved=True, max_repeats=None
            ),
            '"default" entry',
        ),
    ],
)
def test_invalid_trees_raise_value_error(build: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build()


# --- render_tree -----------------------------------------------------------------------------


def test_render_gpu_tree() -> None:
    assert render_tree(GPU_TREE) == "\n".join(
        [
            "route  receiver: weekly-digest",
            '├── {team="storage"}  continue: true  receiver: storage-team',
            '├── {severity="critical"}  receiver: oncall-core  group_wait: 10s  repeat_interval: {critical: 5m}',
            '│   ├── {region="north"}  receiver: critical-north',
            '│   └── {region="south"}  receiver: critical-south',
            '├── {severity="warning"}  receiver: ops',
            '│   ├── {region="north"}  receiver: ops-north',
            '│   └── {region="south"}  receiver: ops-south',
            '└── {severity="info"}  receiver: weekly-digest  send_resolved: false',
        ]
    )


def test_render_inherited_receiver_catch_all_and_caps() -> None:
    tree = Route(
        receiver="root",
        group_interval=10 * MIN,
        routes=(
            Route(
                matchers=m('a="1", b=~"x|y"'),
                max_repeats=UNLIMITED,
                routes=(Route(receiver="leaf", max_repeats=2), Route(matchers=m('c!~"z"'))),
            ),
        ),
    )
    assert render_tree(tree) == "\n".join(
        [
            "route  receiver: root  group_interval: 10m",
            '└── {a="1", b=~"x|y"}  receiver: root  max_repeats: unlimited',
            "    ├── {}  receiver: leaf  max_repeats: 2",
            '    └── {c!~"z"}  receiver: root',
        ]
    )
