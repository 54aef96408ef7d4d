"""What Alertmanager (0.28+) accepts in inhibit rules and matchers is accepted here with its meaning,
and what it refuses is refused with file, path and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.labels import Matcher, MatchType
from alertrouter.ruleset import ConfigError, load_ruleset, matcher_notes
from alertrouter.ruleset.build import compile_rules

EQ, RE = MatchType.EQ, MatchType.RE


def load(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rules.yml"
    path.write_text(text)
    return path


def problems(path: Path) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_ruleset(path, {})
    return [str(p) for p in info.value.problems]


@pytest.mark.parametrize(
    ("rule", "source", "target"),
    [
        # Alertmanager validates no inhibit rule for having matchers: an absent side is "every alert"
        ("{target_matchers: ['severity=\"warning\"'], equal: [node]}", (), (Matcher("severity", EQ, "warning"),)),
        ("{source_matchers: ['alertname=\"NodeDown\"']}", (Matcher("alertname", EQ, "NodeDown"),), ()),
        ("{source_matchers: ['{}'], target_matchers: []}", (), ()),
        ("{source_matchers: [], target_matchers: ['{}'], equal: [node]}", (), ()),
        ("{}", (), ()),
        ("{equal: [service.name]}", (), ()),
        ("{equal: [1, true]}", (), ()),  # Go's YAML decoder reads them as the names "1" and "true"
        (
            "{source_match: {alertname: NodeDown}, target_match_re: {severity: 'warning|info'}}",
            (Matcher("alertname", EQ, "NodeDown"),),
            (Matcher("severity", RE, "warning|info"),),
        ),
        (
            '{source_matchers: [\'"k8s.node.name"=~"gpu-.*"\'], target_matchers: [\'service.name="api"\']}',
            (Matcher("k8s.node.name", RE, "gpu-.*"),),
            (Matcher("service.name", EQ, "api"),),
        ),
    ],
)
def test_inhibit_rules_alertmanager_accepts(
    tmp_path: Path, rule: str, source: tuple[Matcher, ...], target: tuple[Matcher, ...]
) -> None:
    path = load(tmp_path, f"inhibit_rules:\n  - {rule}\nroute: {{receiver: r}}\nreceivers: [{{name: r}}]\n")
    (compiled,) = compile_rules(load_ruleset(path, {})).inhibit_rules
    assert compiled.source == source
    assert compiled.target == target


@pytest.mark.parametrize(
    ("rule", "path", "reason"),
    [
        ("{equal: ['']}", "inhibit_rules[0].equal", "invalid label name '' in equal list"),
        ("{source_match: {service.name: x}}", "inhibit_rules[0].source_match", "invalid label name 'service.name'"),
        ("{target_match_re: {'a-b': x}}", "inhibit_rules[0].target_match_re", "invalid label name 'a-b'"),
        ("{target_match_re: {a: '(('}}", "inhibit_rules[0].target_match_re", "invalid regular expression"),
        ("{source_matchers: ['foo!bar']}", "inhibit_rules[0].source_matchers", "invalid matcher 'foo!bar'"),
        ("{target_matchers: ['a=~\"[z\"']}", "inhibit_rules[0].target_matchers", "missing ]"),
    ],
)
def test_what_alertmanager_refuses_is_refused_with_file_and_path(
    tmp_path: Path, rule: str, path: str, reason: str
) -> None:
    f = load(tmp_path, f"inhibit_rules:\n  - {rule}\nroute: {{receiver: r}}\nreceivers: [{{name: r}}]\n")
    found = problems(f)
    assert any(p.startswith(f"{f}:{path}: ") and reason in p for p in found), found


def test_legacy_map_refusal_suggests_the_matcher_to_write(tmp_path: Path) -> None:
    routes = "[{receiver: r, match: {service.name: api}}]"
    f = load(tmp_path, f"route:\n  receiver: r\n  routes: {routes}\nreceivers: [{{name: r}}]\n")
    (found,) = problems(f)
    assert found.startswith(f"{f}:route.routes[0]: ")
    assert 'service.name="api"' in found


def test_matchers_only_the_classic_parser_reads_are_noted(tmp_path: Path) -> None:
    f = load(
        tmp_path,
        "inhibit_rules:\n"
        "  - {source_matchers: ['alertname=\"NodeDown\"'], target_matchers: ['{severity=\"warning\"', 'a=b']}\n"
        "route:\n  receiver: r\n  routes:\n    - {receiver: r, matchers: ['service.name=\"x\"', 'x=foo\\\\t']}\n"
        "receivers: [{name: r}]\n",
    )
    load_ruleset(f, {})  # loads: Alertmanager accepts these too
    notes = [str(n) for n in matcher_notes(f)]
    assert len(notes) == 2, notes
    assert notes[0].startswith(f"{f}:inhibit_rules[0].target_matchers[0]: ")
    assert notes[1].startswith(f"{f}:route.routes[0].matchers[1]: ")


def test_inhibit_rule_names_may_repeat_as_in_alertmanager(tmp_path: Path) -> None:
    """Alertmanager only logs a repeated inhibit rule name; each rule still mutes on its own."""
    rules = "[{name: same, target_matchers: ['a=\"1\"']}, {name: same, target_matchers: ['b=\"1\"']}, {}, {}]"
    f = load(tmp_path, f"inhibit_rules: {rules}\nroute: {{receiver: r}}\nreceivers: [{{name: r}}]\n")
    compiled = compile_rules(load_ruleset(f, {})).inhibit_rules
    assert [r.name for r in compiled] == ["same", "same (inhibit_rules[1])", "inhibit_rules[2]", "inhibit_rules[3]"]
    assert [r.target for r in compiled[:2]] == [(Matcher("a", EQ, "1"),), (Matcher("b", EQ, "1"),)]


def test_legacy_map_values_are_read_as_text_like_alertmanagers_yaml(tmp_path: Path) -> None:
    """Go's YAML decoder puts a scalar's text into a string: `{code: 500}` is code="500"."""
    f = load(
        tmp_path,
        "inhibit_rules:\n  - {source_match: {code: 500, paged: true, empty: }, target_match_re: {ratio: 0.5}}\n"
        "route: {receiver: r}\nreceivers: [{name: r}]\n",
    )
    (rule,) = compile_rules(load_ruleset(f, {})).inhibit_rules
    assert rule.source == (Matcher("code", EQ, "500"), Matcher("paged", EQ, "true"), Matcher("empty", EQ, ""))
    assert rule.target == (Matcher("ratio", RE, "0.5"),)
