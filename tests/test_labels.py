"""Tests for alertrouter.fingerprints and alertrouter.labels: fingerprints and Alertmanager matchers.

Expected values come from Alertmanager's documented behaviour and its own test tables
(prometheus/alertmanager pkg/labels/parse_test.go, prometheus/common model/*_test.go), and from
a real Alertmanager 0.25 (webhook `fingerprint`s, `amtool config routes show/test` output).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import pickle
import re
from collections.abc import Callable, Mapping

import pytest

import alertrouter.fingerprints as fingerprints_module
from alertrouter.fingerprints import fingerprint, fingerprints
from alertrouter.labels import (
    Matcher,
    MatcherError,
    MatchType,
    matchers_from_legacy,
    matches_all,
    parse_matcher,
    parse_matchers,
    parse_matchers_classic,
)

EQ, NE, RE, NRE = MatchType.EQ, MatchType.NE, MatchType.RE, MatchType.NRE


# --- fingerprint -----------------------------------------------------------------------------


def _reference_fingerprint(labels: Mapping[str, str]) -> str:
    """FNV-1a 64 written independently: byte stream first, then a reduce with modulo."""
    stream = bytearray()
    for name, value in sorted(labels.items(), key=lambda item: item[0].encode("utf-8")):
        stream += name.encode("utf-8") + bytes([0xFF]) + value.encode("utf-8") + bytes([0xFF])
    digest = functools.reduce(lambda h, byte: ((h ^ byte) * 1099511628211) % 2**64, stream, 14695981039346656037)
    return format(digest, "x").rjust(16, "0")


# Decimal values from prometheus/common's signature_test.go and metric_test.go.
_PROMETHEUS_VECTORS = [
    ({}, 14695981039346656037),
    ({"name": "garland, briggs", "fear": "love is not enough"}, 5799056148416392346),
    ({"first_name": "electro", "occupation": "robot", "manufacturer": "westinghouse"}, 5911716720268894962),
    ({"x": "y"}, 8241431561484471700),
    ({"a": "bb", "b": "c"}, 3016285359649981711),
    ({"a": "b", "bb": "c"}, 7122421792099404749),
    ({"first-label": "first-label-value"}, 5146282821936882169),
    ({"first-label": "first-label-value", "second-label": "second-label-value"}, 3195800080984914717),
]

# The `fingerprint` a real Alertmanager 0.25 reported for these label sets.
_ALERTMANAGER_VECTORS = [
    ({"alertname": "x"}, "d240efc3896bf266"),
    ({"alertname": "a2690"}, "000cba5539749764"),
    (
        {
            "alertname": "GPUXidError",
            "cluster": "gpu-prod-sh1",
            "gpu": "3",
            "instance": "10.1.2.3:9400",
            "node": "node-0123",
        },
        "a21f5cb5d46c29c9",
    ),
    ({"alertname": "ünïcødé", "msg": '日本語 "quoted" \\ back\nnl', "z": "\x00nul"}, "19354c99a840a9ea"),
    ({"B": "upper", "_": "under", "a": "😀", "alertname": "emoji"}, "2a38904dcd023f7d"),
]


_ALERTMANAGER_VECTORS_LABELS = [labels for labels, _ in _ALERTMANAGER_VECTORS]


def test_fingerprint_of_empty_set_is_fnv_offset_basis() -> None:
    assert fingerprint({}) == "cbf29ce484222325"


@pytest.mark.parametrize(("labels", "expected"), _PROMETHEUS_VECTORS)
def test_fingerprint_matches_prometheus_vectors(labels: dict[str, str], expected: int) -> None:
    assert fingerprint(labels) == f"{expected:016x}"


@pytest.mark.parametrize(("labels", "expected"), _ALERTMANAGER_VECTORS)
def test_fingerprint_matches_real_alertmanager(labels: dict[str, str], expected: str) -> None:
    assert fingerprint(labels) == expected


@pytest.mark.parametrize(
    "labels",
    [
        {"alertname": "HostDown"},
        {"b": "2", "a": "1", "c": ""},
        {"ä": "x", "z": "y", "Z": "w", "_": "v"},  # non-ASCII names sort after ASCII, as bytes do
        {"\U0001f600": "emoji", "\uffff": "bmp-last"},  # astral vs BMP: code point order == byte order
        {"k": "v" * 5000},
        {f"label_{i}": f"value-{i}" for i in range(30)},
    ],
)
def test_fingerprint_agrees_with_reference_implementation(labels: dict[str, str]) -> None:
    assert fingerprint(labels) == _reference_fingerprint(labels)


def test_fingerprints_of_a_batch_agree_with_the_reference_one_by_one() -> None:
    # Enough new label sets to take the many-at-once path, of many lengths (short, long, non-ASCII, empty),
    # with repeats, in an order that is not by length.
    sets: list[dict[str, str]] = [{}]
    for i in range(150):
        sets.append(
            {"alertname": "GPUHighTemp", "Hostname": f"gpu-node-{i:04d}", "gpu": str(i % 8), "x": "é" * (i % 37)}
        )
    sets += [*_ALERTMANAGER_VECTORS_LABELS, {"k": "v" * 3000}, sets[7], sets[0]]
    assert fingerprints(sets) == [_reference_fingerprint(labels) for labels in sets]
    assert fingerprints(sets) == [fingerprint(labels) for labels in sets]  # now all known: the same answers


def test_remembered_fingerprints_never_mix_up_names_and_values_or_orders() -> None:
    sets = [
        {"a": "b"},
        {"b": "a"},
        {"a": "x", "b": "y"},
        {"a": "y", "b": "x"},
        {"b": "y", "a": "x"},  # the third, in another order: another cache key, the same fingerprint
        {"a": "b", "": ""},
    ]
    first = fingerprints(sets)
    again = fingerprints(sets)  # all remembered now
    assert first == again == [_reference_fingerprint(labels) for labels in sets]
    assert first[2] == first[4]
    assert len(set(first)) == 5


def test_fingerprints_survive_forgetting_in_the_middle_of_a_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fingerprints_module, "_KNOWN", {})
    monkeypatch.setattr(fingerprints_module, "_KNOWN_MAX", 4)
    known = [{"alertname": f"known-{i}"} for i in range(4)]
    fingerprints(known)
    # The new sets push every known one out while this batch, which also holds them, is answered.
    sets = [*known, *({"alertname": f"new-{i}"} for i in range(20))]
    assert fingerprints(sets) == [_reference_fingerprint(labels) for labels in sets]


def test_fingerprints_of_a_batch_match_real_alertmanager() -> None:
    filler = [{"alertname": f"filler-{i}"} for i in range(40)]  # unknown sets, so the batch path is taken
    got = fingerprints([*filler, *_ALERTMANAGER_VECTORS_LABELS])[len(filler) :]
    assert got == [expected for _, expected in _ALERTMANAGER_VECTORS]


def test_fingerprint_ignores_insertion_order_and_is_lowercase_padded_hex() -> None:
    forward = {f"n{i}": str(i) for i in range(10)}
    backward = dict(reversed(list(forward.items())))
    assert fingerprint(forward) == fingerprint(backward)
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint(forward))


def test_fingerprint_separator_keeps_name_value_boundaries() -> None:
    assert fingerprint({"a": "bc"}) != fingerprint({"ab": "c"})
    assert fingerprint({"a": ""}) != fingerprint({})


def test_fingerprint_of_lone_surrogate_uses_replacement_char_like_alertmanager() -> None:
    # Alertmanager decoded "\ud800" from JSON as U+FFFD and reported a7a7458bf060fa9c.
    assert fingerprint({"alertname": "x", "a": "\ud800"}) == "a7a7458bf060fa9c"
    assert fingerprint({"alertname": "x", "a": "\ufffd"}) == "a7a7458bf060fa9c"


# --- parse_matcher ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "match_type", "value"),
    [
        ('foo="bar"', "foo", EQ, "bar"),
        ('foo!="bar"', "foo", NE, "bar"),
        ('foo=~"bar.*"', "foo", RE, "bar.*"),
        ('foo!~"bar.*"', "foo", NRE, "bar.*"),
        ("foo=bar", "foo", EQ, "bar"),
        ("foo=~bar.*", "foo", RE, "bar.*"),
        ("foo = bar baz", "foo", EQ, "bar baz"),  # unquoted values keep inner spaces
        ('  foo  !=  "bar"  ', "foo", NE, "bar"),
        ('\tfoo\n=~\r"x"\f', "foo", RE, "x"),
        ('foo=" padded "', "foo", EQ, " padded "),  # spaces inside quotes are kept
        ('foo=""', "foo", EQ, ""),
        ("foo=", "foo", EQ, ""),
        ("job=  ", "job", EQ, ""),
        ('foo="a\\"b"', "foo", EQ, 'a"b'),
        ('foo="a\\\\b"', "foo", EQ, "a\\b"),
        ('foo="a\\nb"', "foo", EQ, "a\nb"),
        ('foo="a\\tb"', "foo", EQ, "a\\tb"),  # only \" \\ \n are escapes: \t keeps its backslash
        ('foo="\\d+"', "foo", EQ, "\\d+"),
        ("foo=bar\\t", "foo", EQ, "bar\\t"),
        ("foo=bar\\n", "foo", EQ, "bar\n"),  # escapes apply to unquoted values too
        ('foo=\\"', "foo", EQ, '"'),
        ("foo=bar\\", "foo", EQ, "bar\\"),  # a trailing lone backslash is literal
        ('foo="multi\nline"', "foo", EQ, "multi\nline"),  # a literal newline is tolerated
        ("tricky=~~~", "tricky", RE, "~~"),
        ('trickier==\\\\=\\=\\"', "trickier", EQ, '=\\=\\="'),
        ("foo='", "foo", EQ, "'"),
        ("foo=`", "foo", EQ, "`"),
        ('foo:bar="x"', "foo:bar", EQ, "x"),  # the classic parser allows ':' in names
        ('_private="x"', "_private", EQ, "x"),
        ('foo="bar,baz"', "foo", EQ, "bar,baz"),
        ('foo="café ☕"', "foo", EQ, "café ☕"),
        ('foo=~"(?i)BAR"', "foo", RE, "(?i)BAR"),
    ],
)
def test_parse_matcher(text: str, name: str, match_type: MatchType, value: str) -> None:
    assert parse_matcher(text) == Matcher(name, match_type, value)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty matcher"),
        ("   ", "empty matcher"),
        ("foo", "expected <name><op><value>"),
        ("foo!bar", "expected <name><op><value>"),
        ("=bar", "missing label name"),
        ('invalid-name = "valid label"', "invalid label name 'invalid-name'"),
        ('1foo="x"', "invalid label name '1foo'"),
        ('"foo"="bar"', "invalid label name '\"foo\"'"),  # quoted names are UTF-8-parser only
        ('{foo="bar"}', "invalid label name '{foo'"),  # braces belong to parse_matchers
        ('fö="x"', "invalid label name 'fö'"),
        ('job="value', "missing closing double quote"),
        ('foo="bar\\"', "missing closing double quote"),
        ('job=value"', "unescaped double quote"),
        ('contains_unescaped_quote = foo"bar', "unescaped double quote"),
        ('foo="bar"baz"', "unescaped double quote"),
        ('foo="a"b', "unescaped double quote"),
        ('foo=~"(("', "invalid regular expression: missing )"),
        ('foo=~"invalid[regexp"', "invalid regular expression: missing ]"),
        ('foo!~"a{1001}"', "invalid regular expression: invalid repetition size"),
        ('foo="\ud800"', "not valid UTF-8"),
    ],
)
def test_parse_matcher_rejects(text: str, reason: str) -> None:
    with pytest.raises(MatcherError) as caught:
        parse_matcher(text)
    assert caught.value.text == text
    assert repr(text) in str(caught.value)
    assert reason in str(caught.value)


def test_invalid_regex_message_hides_the_anchoring_wrapper() -> None:
    with pytest.raises(MatcherError) as caught:
        parse_matcher('foo=~"(("')
    assert str(caught.value) == "invalid matcher 'foo=~\"((\"': invalid regular expression: missing )"


def test_matcher_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid matcher"):
        parse_matcher("nope")


# --- RE2 semantics ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("regex", "value", "expected"),
    [
        # anchoring: ^(?:re)$
        ("bar", "bar", True),
        ("bar", "foobar", False),
        ("bar", "barfoo", False),
        ("bar|baz", "xbaz", False),  # the alternation is inside the group
        ("bar|baz", "baz", True),
        ("bar", "bar\n", False),  # $ does not match before a trailing newline (Python's does)
        ("bar\\n", "bar\n", True),
        ("a.b", "a\nb", False),  # . excludes newline by default
        ("(?s)a.b", "a\nb", True),
        (".*", "", True),
        (".+", "", False),
        # RE2/Go syntax that Python's re rejects or reads differently
        ("a\\z", "a", True),
        ("[[:digit:]]+", "123", True),
        ("[[:alpha:]]+", "12", False),
        ("\\pL+", "héllo", True),
        ("\\p{L}+", "日本", True),
        ("\\p{Greek}+", "αβγ", True),
        ("\\PL+", "123", True),
        ("\\d+", "١٢٣", False),  # \d is ASCII-only in RE2; Python's str \d matches Arabic digits
        ("\\w+", "é", False),
        ("a(?i)b", "aB", True),  # inline flag mid-pattern: an error in Python 3.11
        ("(?i)BAR", "bar", True),
        ("(?U)a+", "aaa", True),  # ungreedy flag exists in RE2 only; full match still required
        ("(?P<n>x)y", "xy", True),
        ("\\Qa.b\\E", "a.b", True),
        ("\\Qa.b\\E", "axb", False),
    ],
)
def test_regex_semantics_are_re2_fully_anchored(regex: str, value: str, expected: bool) -> None:
    assert Matcher("foo", RE, regex).matches(value) is expected
    assert Matcher("foo", NRE, regex).matches(value) is not expected


@pytest.mark.parametrize(
    ("regex", "reason"),
    [
        ("(a)\\1", "invalid escape sequence"),  # no backreferences
        ("(?=x)", "invalid perl operator"),  # no lookaround
        ("a++", "bad repetition operator"),  # no possessive quantifiers
        ("\\Z", "invalid escape sequence"),  # \Z is Python's; RE2 has \z
        ("[[:nope:]]", "invalid character class range"),
    ],
)
def test_regex_features_re2_rejects(regex: str, reason: str) -> None:
    text = f'foo=~"{regex}"'
    with pytest.raises(MatcherError) as caught:
        parse_matcher(text)
    assert repr(text) in str(caught.value)
    assert f"invalid regular expression: {reason}" in str(caught.value)


def test_constructing_matcher_with_bad_regex_names_canonical_form() -> None:
    with pytest.raises(MatcherError, match=re.escape("""invalid matcher 'x!~"[a"'""")):
        Matcher("x", NRE, "[a")


def test_equality_matchers_do_not_compile_their_value() -> None:
    assert Matcher("foo", EQ, "((").matches("((")
    assert Matcher("foo", NE, "((").matches("x")


# --- matching label sets ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "labels", "expected"),
    [
        ('foo="bar"', {"foo": "bar"}, True),
        ('foo="bar"', {"foo": "baz"}, False),
        ('foo="bar"', {}, False),
        ('foo=""', {}, True),  # absent label equals ""
        ('foo=""', {"foo": "x"}, False),
        ('foo=""', {"foo": ""}, True),
        ('foo!=""', {}, False),  # != "" means "has foo"
        ('foo!=""', {"foo": "x"}, True),
        ('foo!="bar"', {}, True),
        ('foo=~".*"', {}, True),
        ('foo=~".+"', {}, False),
        ('foo!~".+"', {}, True),
        ('foo!~"bar.*"', {"foo": "barn"}, False),
        ('foo!~"bar.*"', {"foo": "xbar"}, True),
        ('severity=~"critical|page"', {"severity": "page", "x": "y"}, True),
        ('foo="bar"', {"Foo": "bar"}, False),  # names are case sensitive
    ],
)
def test_matches_labels(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_matcher(text).matches_labels(labels) is expected


def test_matches_lone_surrogate_value_without_raising() -> None:
    assert Matcher("a", RE, "\ufffd").matches("\ud800")
    assert not Matcher("a", RE, "x").matches("\ud800")


@pytest.mark.parametrize(
    ("texts", "labels", "expected"),
    [
        ([], {}, True),
        ([], {"a": "1"}, True),
        (['a="1"', 'b=~"x|y"'], {"a": "1", "b": "y"}, True),
        (['a="1"', 'b=~"x|y"'], {"a": "1", "b": "z"}, False),
        (['a="1"', 'b=~"x|y"'], {"a": "1"}, False),
        (['a="1"', 'b=""'], {"a": "1"}, True),
    ],
)
def test_matches_all(texts: list[str], labels: dict[str, str], expected: bool) -> None:
    assert matches_all([parse_matcher(t) for t in texts], labels) is expected


# --- parse_matchers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{}", []),
        ("", []),
        ("   ", []),
        ('{a="1", b=~"x|y"}', [Matcher("a", EQ, "1"), Matcher("b", RE, "x|y")]),
        ('a="1", b=~"x|y"', [Matcher("a", EQ, "1"), Matcher("b", RE, "x|y")]),
        ("foo=bar,dings!=bums", [Matcher("foo", EQ, "bar"), Matcher("dings", NE, "bums")]),
        ('{foo = "bar", dings != "bums", }', [Matcher("foo", EQ, "bar"), Matcher("dings", NE, "bums")]),
        ('a="1",', [Matcher("a", EQ, "1")]),
        ('a="1" , ', [Matcher("a", EQ, "1")]),
        ('{foo="bar,quux", job="job1"}', [Matcher("foo", EQ, "bar,quux"), Matcher("job", EQ, "job1")]),
        (
            '{quote="She said: \\"Hi, ladies! That\'s gender-neutral…\\""}',
            [Matcher("quote", EQ, 'She said: "Hi, ladies! That\'s gender-neutral…"')],
        ),
        (
            'contains_quote != "\\"" , contains_comma !~ "foo,bar" , ',
            [Matcher("contains_quote", NE, '"'), Matcher("contains_comma", NRE, "foo,bar")],
        ),
        ("{foo=bar}}", [Matcher("foo", EQ, "bar}")]),  # only one brace is stripped
        ("{foo=bar}},}", [Matcher("foo", EQ, "bar}}")]),
        ("{foo=,bar=}}", [Matcher("foo", EQ, ""), Matcher("bar", EQ, "}")]),
        ("{foo=", [Matcher("foo", EQ, "")]),  # braces are stripped independently
        ("{foo=}b", [Matcher("foo", EQ, "}b")]),
        ('{foo="a\\\\"}', [Matcher("foo", EQ, "a\\")]),
        ('a="1",b="2",a="3"', [Matcher("a", EQ, "1"), Matcher("b", EQ, "2"), Matcher("a", EQ, "3")]),
    ],
)
def test_parse_matchers(text: str, expected: list[Matcher]) -> None:
    assert parse_matchers(text) == expected


@pytest.mark.parametrize(
    ("text", "bad_item", "reason"),
    [
        (",", "", "empty matcher"),
        ("{,}", "", "empty matcher"),
        ("a=1,,b=2", "", "empty matcher"),
        ('{a="1", b=~"(("}', 'b=~"(("', "invalid regular expression"),
        ('{invalid-name = "valid label"}', 'invalid-name = "valid label"', "invalid label name"),
        ("{{foo=", "{foo=", "invalid label name"),
        (' {a="1"}', '{a="1"', "invalid label name"),  # Alertmanager does not trim before '{'
        ('"{foo=\\"bar\\"}"', '"{foo=\\"bar\\"}"', "invalid label name"),  # double-escaped input
        ('a="x\\,", b="y"', 'a="x\\,", b="y"', "unescaped double quote"),  # Alertmanager's split quirk
    ],
)
def test_parse_matchers_classic_rejects(text: str, bad_item: str, reason: str) -> None:
    """The classic parser alone; what the default (fallback) parser makes of these is in
    tests/test_matchers_parity.py."""
    with pytest.raises(MatcherError) as caught:
        parse_matchers_classic(text)
    assert caught.value.text == bad_item
    assert repr(bad_item) in str(caught.value)
    assert repr(text) in str(caught.value)
    assert reason in str(caught.value)


# --- str() -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matcher", "expected"),
    [
        (Matcher("foo", EQ, "bar"), 'foo="bar"'),
        (Matcher("foo", NE, ""), 'foo!=""'),
        (Matcher("foo", RE, "a|b"), 'foo=~"a|b"'),
        (Matcher("foo", NRE, "\\d+"), 'foo!~"\\\\d+"'),
        (Matcher("foo", EQ, 'say "hi"\n'), 'foo="say \\"hi\\"\\n"'),
        (Matcher("foo", EQ, "tab\there"), 'foo="tab\there"'),
    ],
)
def test_str_is_alertmanager_canonical_form(matcher: Matcher, expected: str) -> None:
    assert str(matcher) == expected


_ROUND_TRIP_VALUES = [
    "",
    "plain",
    " lead and trail ",
    'quote " inside',
    "back\\slash",
    "trailing backslash\\",
    "\\n literal backslash-n",
    "\\",
    '\\"',
    "new\nline",
    "\n",
    "tab\tand\r\x0bmore",
    "comma, and } brace {",
    "=~!=",
    "日本語 ☕ 😀",
]


@pytest.mark.parametrize("value", _ROUND_TRIP_VALUES)
@pytest.mark.parametrize("match_type", [EQ, NE])
def test_str_round_trips_through_parse_matcher(value: str, match_type: MatchType) -> None:
    matcher = Matcher("label_name", match_type, value)
    assert parse_matcher(str(matcher)) == matcher
    assert parse_matchers(f'{{{matcher}, other=~"x"}}') == [matcher, Matcher("other", RE, "x")]


@pytest.mark.parametrize("regex", ["a\\.b", '\\"quoted\\"', "x\\\\y", "(?s).*\\n.*", "[,}{]"])
def test_regex_matchers_round_trip(regex: str) -> None:
    matcher = Matcher("name", RE, regex)
    assert parse_matcher(str(matcher)) == matcher


# --- legacy match / match_re -----------------------------------------------------------------


def test_legacy_maps_become_eq_and_re_matchers() -> None:
    matchers = matchers_from_legacy({"alertname": "NodeDown", "env": ""}, {"node": "gpu-.*"})
    assert matchers == [
        Matcher("alertname", EQ, "NodeDown"),
        Matcher("env", EQ, ""),
        Matcher("node", RE, "gpu-.*"),
    ]
    assert matches_all(matchers, {"alertname": "NodeDown", "node": "gpu-01"})
    assert not matches_all(matchers, {"alertname": "NodeDown", "node": "cpu-01"})


@pytest.mark.parametrize(("match", "match_re"), [(None, None), ({}, {}), (None, {}), ({}, None)])
def test_legacy_empty_forms_give_no_matchers(match: dict[str, str] | None, match_re: dict[str, str] | None) -> None:
    assert matchers_from_legacy(match, match_re) == []


def test_legacy_values_are_verbatim_and_anchored() -> None:
    (eq,) = matchers_from_legacy({"msg": 'a \\n "b"'}, None)
    assert eq.value == 'a \\n "b"'
    (regex,) = matchers_from_legacy(None, {"job": "node"})
    assert not regex.matches("node-exporter")


@pytest.mark.parametrize(
    ("match", "match_re", "reason"),
    [
        ({"a:b": "x"}, None, "invalid label name 'a:b'"),  # colon allowed in matchers, not here
        ({"bad-name": "x"}, None, "invalid label name 'bad-name'"),
        (None, {"": "x"}, "invalid label name ''"),
        (None, {"node": "(("}, "invalid regular expression: missing )"),
    ],
)
def test_legacy_rejects(match: dict[str, str] | None, match_re: dict[str, str] | None, reason: str) -> None:
    with pytest.raises(MatcherError) as caught:
        matchers_from_legacy(match, match_re)
    assert reason in str(caught.value)
    (name, value) = next(iter((match or match_re or {}).items()))
    assert name in caught.value.text
    assert value in caught.value.text


# --- the Matcher value object ----------------------------------------------------------------


def test_matcher_is_frozen_hashable_and_compares_by_fields() -> None:
    first, second = Matcher("a", RE, "x+"), parse_matcher('a=~"x+"')
    assert first == second
    assert len({first, second, Matcher("a", NRE, "x+")}) == 2
    assert first != Matcher("a", RE, "x*")
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.value = "y"  # type: ignore[misc]


def test_matcher_repr_omits_compiled_regex() -> None:
    assert repr(Matcher("a", RE, "x")) == "Matcher(name='a', type=<MatchType.RE: '=~'>, value='x')"


def _pickle_round_trip(matcher: Matcher) -> Matcher:
    restored: Matcher = pickle.loads(pickle.dumps(matcher))  # noqa: S301 - our own bytes
    return restored


@pytest.mark.parametrize("clone", [copy.copy, copy.deepcopy, _pickle_round_trip])
def test_matcher_survives_copy_and_pickle(clone: Callable[[Matcher], Matcher]) -> None:
    original = Matcher("a", RE, "x+")
    cloned = clone(original)
    assert cloned == original
    assert cloned.matches("xx")
    assert not cloned.matches("y")


def test_match_type_values_are_alertmanager_operators() -> None:
    assert [t.value for t in MatchType] == ["=", "!=", "=~", "!~"]
