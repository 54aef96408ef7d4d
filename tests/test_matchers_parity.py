"""Alertmanager (0.28+, checked at 0.34) matcher parity: the UTF-8 grammar, the classic parser and
the default fallback between them, on the inputs and outcomes of Alertmanager's own tables
(`matcher/parse/parse_test.go`, `pkg/labels/parse_test.go`, `matcher/compat/parse_test.go`,
`matcher/compliance/compliance_test.go`) plus OpenTelemetry-style label names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from alertrouter.labels import (
    Matcher,
    MatcherError,
    MatchType,
    alert_title,
    fallback_note,
    format_label_set,
    is_valid_label_name,
    parse_matchers,
    parse_matchers_classic,
    parse_matchers_utf8,
)

EQ, NE, RE, NRE = MatchType.EQ, MatchType.NE, MatchType.RE, MatchType.NRE


def m(name: str, match_type: MatchType, value: str) -> Matcher:
    return Matcher(name, match_type, value)


# --- the UTF-8 grammar alone (Alertmanager's matcher/parse) ----------------------------------------

UTF8_ACCEPTS = [
    ("", []),
    ("{}", []),
    ("{foo=bar}", [m("foo", EQ, "bar")]),
    ("{foo=bar,}", [m("foo", EQ, "bar")]),
    ("{foo!=bar}", [m("foo", NE, "bar")]),
    ("{foo=~[a-z]+}", [m("foo", RE, "[a-z]+")]),
    ("{foo!~[a-z]+}", [m("foo", NRE, "[a-z]+")]),
    ("{foo=🙂}", [m("foo", EQ, "🙂")]),
    ("{foo=🙂bar}", [m("foo", EQ, "🙂bar")]),
    ("foo=bar", [m("foo", EQ, "bar")]),
    ("foo=bar,", [m("foo", EQ, "bar")]),
    ("foo!=bar", [m("foo", NE, "bar")]),
    ("foo=~[a-z]+", [m("foo", RE, "[a-z]+")]),
    ("foo!~[a-z]+", [m("foo", NRE, "[a-z]+")]),
    ('{"foo"="bar"}', [m("foo", EQ, "bar")]),
    ('{"foo"="bar",}', [m("foo", EQ, "bar")]),
    ('{"foo"!="bar"}', [m("foo", NE, "bar")]),
    ('{"foo"=~"[a-z]+"}', [m("foo", RE, "[a-z]+")]),
    (r'{"foo"=~"\\d+"}', [m("foo", RE, r"\d+")]),
    ('{"foo"!~"[a-z]+"}', [m("foo", NRE, "[a-z]+")]),
    ('{"foo"="🙂"}', [m("foo", EQ, "🙂")]),
    (r'{"foo"="\xf0\x9f\x99\x82"}', [m("foo", EQ, "🙂")]),  # UTF-8 bytes as Go escapes
    (r'{"foo"="\U0001f642"}', [m("foo", EQ, "🙂")]),
    ('{"foo"="🙂bar"}', [m("foo", EQ, "🙂bar")]),
    (r'{"foo"="bar\n"}', [m("foo", EQ, "bar\n")]),
    (r'{"foo"="bar\t"}', [m("foo", EQ, "bar\t")]),
    (r'{"foo"="\"bar\""}', [m("foo", EQ, '"bar"')]),
    (r'{"foo"="bar\\"}', [m("foo", EQ, "bar\\")]),
    ('"foo"="bar"', [m("foo", EQ, "bar")]),
    ('"foo"="bar",', [m("foo", EQ, "bar")]),
    ("{foo=bar,bar!=baz}", [m("foo", EQ, "bar"), m("bar", NE, "baz")]),
    ('{foo="bar",bar!="baz"}', [m("foo", EQ, "bar"), m("bar", NE, "baz")]),
    ("foo=bar,bar!=baz", [m("foo", EQ, "bar"), m("bar", NE, "baz")]),
    ('foo="bar",bar!="baz"', [m("foo", EQ, "bar"), m("bar", NE, "baz")]),
    # compliance_test.go: a dash is no reserved character
    ('{name-with-dashes = "bar"}', [m("name-with-dashes", EQ, "bar")]),
    # the forms of issue 13: quoted and unquoted UTF-8 names, spaces in names, optional braces
    ('"service.name"="api"', [m("service.name", EQ, "api")]),
    ("service.name=api", [m("service.name", EQ, "api")]),
    ('{"foo bar"="baz"}', [m("foo bar", EQ, "baz")]),
    ('foo🙂="bar"', [m("foo🙂", EQ, "bar")]),
    (
        '{ "k8s.pod.name" =~ "checkout-.*" , "service.name" = "checkout" , }',
        [
            m("k8s.pod.name", RE, "checkout-.*"),
            m("service.name", EQ, "checkout"),
        ],
    ),
    (r'a="\u00e9\101\x41\a"', [m("a", EQ, "éAA\a")]),  # Go escapes: \u, octal, \x, \a
    ('""="x"', [m("", EQ, "x")]),  # Alertmanager builds it; it matches alerts without that label
    ("\u3000a\u2003=\u00a0b\u0085", [m("a", EQ, "b")]),  # Go's unicode.IsSpace separates terms
]


@pytest.mark.parametrize(("text", "expected"), UTF8_ACCEPTS)
def test_utf8_grammar_accepts(text: str, expected: list[Matcher]) -> None:
    assert parse_matchers_utf8(text) == expected


UTF8_REJECTS = [
    (",", "expected label name"),
    ("{,}", "expected label name"),
    ("{", "expected close brace"),
    ("}", "expected opening brace"),
    ("foo=bar}", "expected opening brace"),
    ("{foo=bar", "expected close brace"),
    ('{foo=:"bar"}', "expected a comma or close brace"),
    (r'{foo="bar\w"}', "invalid input"),  # \w is no Go escape
    (r'{"foo"=~"\d+"}', "invalid input"),  # regex escapes must be doubled in quotes
    (r"{foo=bar\n}", "invalid input"),  # no escapes outside quotes: the backslash is reserved
    (r'{"foo"="\xf0\x9f"}', "invalid input"),  # half an emoji is not UTF-8
    ('{foo="bar\nbaz"}', "invalid input"),  # a raw line feed inside quotes
    (r"""{foo="it\'s"}""", "invalid input"),  # \' is no escape in a Go double-quoted string
    ('{foo="bar}', 'missing end "'),
    ("{foo=bar}}", "expected end of input"),
    ("foo!bar", "'=~'"),
    ("foo=~~~", "invalid input"),
    ("foo='bar'", "invalid input"),
    ("{foo=bar,,}", "expected a matcher or close brace after comma"),
    ("foo", "end of input"),
    ("foo=", "expected label value"),
    ('{foo=~"(("}', "invalid regular expression"),
]


@pytest.mark.parametrize(("text", "reason"), UTF8_REJECTS)
def test_utf8_grammar_rejects(text: str, reason: str) -> None:
    with pytest.raises(MatcherError) as caught:
        parse_matchers_utf8(text)
    assert reason in str(caught.value)


# --- the classic parser alone (Alertmanager's pkg/labels ParseMatchers) ---------------------------

CLASSIC_ACCEPTS = [
    ("{}", []),
    ("{foo='}", [m("foo", EQ, "'")]),
    ("{foo=`}", [m("foo", EQ, "`")]),
    ('{foo=\\"}', [m("foo", EQ, '"')]),
    ("{foo=bar}", [m("foo", EQ, "bar")]),
    ('{foo="bar"}', [m("foo", EQ, "bar")]),
    ("{foo=~bar.*}", [m("foo", RE, "bar.*")]),
    ('{foo=~"bar.*"}', [m("foo", RE, "bar.*")]),
    ("{foo!=bar}", [m("foo", NE, "bar")]),
    ('{foo!="bar"}', [m("foo", NE, "bar")]),
    ("{foo!~bar.*}", [m("foo", NRE, "bar.*")]),
    ('{foo!~"bar.*"}', [m("foo", NRE, "bar.*")]),
    ('{foo="bar", baz!="quux"}', [m("foo", EQ, "bar"), m("baz", NE, "quux")]),
    ('{foo="bar", baz!~"quux.*"}', [m("foo", EQ, "bar"), m("baz", NRE, "quux.*")]),
    ('{foo="bar",baz!~".*quux", derp="wat"}', [m("foo", EQ, "bar"), m("baz", NRE, ".*quux"), m("derp", EQ, "wat")]),
    ('{foo="bar", instance=~"some-api.*"}', [m("foo", EQ, "bar"), m("instance", RE, "some-api.*")]),
    ('{foo=""}', [m("foo", EQ, "")]),
    ('{foo="bar,quux", job="job1"}', [m("foo", EQ, "bar,quux"), m("job", EQ, "job1")]),
    ('{foo = "bar", dings != "bums", }', [m("foo", EQ, "bar"), m("dings", NE, "bums")]),
    ("foo=bar,dings!=bums", [m("foo", EQ, "bar"), m("dings", NE, "bums")]),
    ('statuscode=~"5.."', [m("statuscode", RE, "5..")]),
    ("tricky=~~~", [m("tricky", RE, "~~")]),
    (r"trickier==\\=\=\"", [m("trickier", EQ, r'=\=\="')]),
    (
        r'contains_quote != "\"" , contains_comma !~ "foo,bar" , ',
        [m("contains_quote", NE, '"'), m("contains_comma", NRE, "foo,bar")],
    ),
    ("{foo=bar}}", [m("foo", EQ, "bar}")]),
    ("{foo=bar}},}", [m("foo", EQ, "bar}}")]),
    ("{foo=,bar=}}", [m("foo", EQ, ""), m("bar", EQ, "}")]),
    (r"{foo=bar\t}", [m("foo", EQ, r"bar\t")]),  # a spurious escape keeps its backslash
    (r"{foo=bar\n}", [m("foo", EQ, "bar\n")]),
    (r"{foo=bar\}", [m("foo", EQ, "bar\\")]),
    (r"{foo=bar\\}", [m("foo", EQ, "bar\\")]),
    (r"{foo=bar\"}", [m("foo", EQ, 'bar"')]),
    ("job=", [m("job", EQ, "")]),
    ("{foo=", [m("foo", EQ, "")]),
    ("{foo=}b", [m("foo", EQ, "}b")]),
]


@pytest.mark.parametrize(("text", "expected"), CLASSIC_ACCEPTS)
def test_classic_parser_accepts(text: str, expected: list[Matcher]) -> None:
    assert parse_matchers_classic(text) == expected


CLASSIC_REJECTS = [
    ",",
    "{,}",
    'job="value',
    'job=value"',
    r'trickier==\\=\=\""',
    'contains_unescaped_quote = foo"bar',
    '{invalid-name = "valid label"}',
    '{foo=~"invalid[regexp"}',
    r'"{foo=\"bar"}',
    r'"foo=\"bar"',
    r'"foo=\"bar\""',
    r'"foo=\"bar\"',
    r'"{foo=\"bar\"}"',
    '"foo="bar""',
    "{{foo=",
    '"service.name"="api"',
    "foo🙂=bar",
]


@pytest.mark.parametrize("text", CLASSIC_REJECTS)
def test_classic_parser_rejects(text: str) -> None:
    with pytest.raises(MatcherError):
        parse_matchers_classic(text)


# --- the default: UTF-8 with the classic parser as fallback (matcher/compat) -----------------------

FALLBACK_ACCEPTS = [
    # compat/parse_test.go
    ("foo=bar", [m("foo", EQ, "bar")]),
    ("foo🙂=bar", [m("foo🙂", EQ, "bar")]),  # UTF-8 only
    (r"foo=!bar\n", [m("foo", EQ, "!bar\n")]),  # classic only
    (r'foo="\xf0\x9f\x99\x82"', [m("foo", EQ, r"\xf0\x9f\x99\x82")]),  # both, they disagree: classic
    ("{foo=bar,bar=baz}", [m("foo", EQ, "bar"), m("bar", EQ, "baz")]),
    ("{foo🙂=bar,bar=baz🙂}", [m("foo🙂", EQ, "bar"), m("bar", EQ, "baz🙂")]),
    (r"{foo=!bar,bar=$baz\n}", [m("foo", EQ, "!bar"), m("bar", EQ, "$baz\n")]),
    (r'{foo="\xf0\x9f\x99\x82"}', [m("foo", EQ, r"\xf0\x9f\x99\x82")]),
    # disagreement: a Go escape means its character in UTF-8, a backslash and a letter classically
    (r'foo="\t"', [m("foo", EQ, r"\t")]),
    # accepted by one side only
    ('{invalid-name = "valid label"}', [m("invalid-name", EQ, "valid label")]),
    (' {a="1"}', [m("a", EQ, "1")]),  # the classic parser does not trim before '{'; UTF-8 does
    ("}", []),
    ('{a="b"', [m("a", EQ, "b")]),
    ("{foo=bar}}", [m("foo", EQ, "bar}")]),
    ("tricky=~~~", [m("tricky", RE, "~~")]),
    ("{foo='}", [m("foo", EQ, "'")]),
    # OpenTelemetry / Prometheus 3 label names
    ('"service.name"="checkout"', [m("service.name", EQ, "checkout")]),
    ("service.name=checkout", [m("service.name", EQ, "checkout")]),
    (
        '{"k8s.namespace.name"=~"prod-.*", k8s.pod.name!="checkout-0", severity="critical"}',
        [m("k8s.namespace.name", RE, "prod-.*"), m("k8s.pod.name", NE, "checkout-0"), m("severity", EQ, "critical")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), FALLBACK_ACCEPTS)
def test_default_parser_accepts(text: str, expected: list[Matcher]) -> None:
    assert parse_matchers(text) == expected


FALLBACK_REJECTS = [
    ("foo!bar", "invalid matcher 'foo!bar'"),
    ("{foo!bar}", "invalid matcher 'foo!bar'"),
    (",", "empty matcher"),
    ("{,}", "empty matcher"),
    ("a=1,,b=2", "empty matcher"),
    ('job="value', "missing closing double quote"),
    ('{foo=~"invalid[regexp"}', "invalid regular expression"),
    (r'"{foo=\"bar\"}"', "invalid label name"),
    ('a="x\\,", b="y"', "unescaped double quote"),
    ("{{foo=", "nor in the UTF-8 grammar"),
]


@pytest.mark.parametrize(("text", "reason"), FALLBACK_REJECTS)
def test_default_parser_rejects_what_neither_reads(text: str, reason: str) -> None:
    with pytest.raises(MatcherError) as caught:
        parse_matchers(text)
    assert reason in str(caught.value)


@pytest.mark.parametrize(
    ("text", "note"),
    [
        ('alertname="NodeDown"', None),  # both read it the same way
        ('"service.name"="api"', None),  # UTF-8 only: nothing to migrate
        ("foo!bar", None),  # nothing reads it: an error, not a note
        (r"foo=!bar\n", "classic parser only"),
        ('{a="b"', "classic parser only"),
        (r'foo="\t"', "disagree"),
    ],
)
def test_fallback_note_is_given_where_alertmanager_warns(text: str, note: str | None) -> None:
    found = fallback_note(text)
    assert (found is None) if note is None else (found is not None and note in found)


# --- label names and the printed form ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("foo", True),
        ("_foo1", True),
        ("0foo", True),
        ("foo🙂", True),
        ("service.name", True),
        ("", False),
        ("\ud800", False),
    ],
)
def test_label_name_rule_is_non_empty_utf8(name: str, valid: bool) -> None:
    assert is_valid_label_name(name) is valid


_NAMES = [
    "node",
    "service.name",
    "k8s.pod.name",
    "foo bar",
    "foo🙂",
    "a{b}",
    'q"uote',
    "0foo",
    "",
    "tab\there",
    "back\\slash",
    "a=b",
    "comma,name",
]
_VALUES = ["x", 'a"b', "a\\b", "line\nbreak", "tab\t", "🙂", "", "{}", "\\t"]


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize("value", _VALUES)
@pytest.mark.parametrize("match_type", [EQ, NE])
def test_printed_matcher_reads_back_unchanged(name: str, value: str, match_type: MatchType) -> None:
    matcher = m(name, match_type, value)
    assert parse_matchers(str(matcher)) == [matcher]
    assert parse_matchers(f'{{{matcher}, other=~"x|y"}}') == [matcher, m("other", RE, "x|y")]


@pytest.mark.parametrize(
    ("matcher", "text"),
    [
        (m("service.name", EQ, "api"), 'service.name="api"'),
        (m("foo bar", EQ, "baz"), '"foo bar"="baz"'),
        (m("a,b", RE, "x|y"), '"a,b"=~"x|y"'),
        (m("", EQ, "x"), '""="x"'),
    ],
)
def test_printed_form_quotes_names_as_alertmanager(matcher: Matcher, text: str) -> None:
    assert str(matcher) == text


def test_label_set_text_names_an_alert_without_alertname() -> None:
    labels = {"job": "backup", "instance": "db-1:9100", "note": 'say "hi"'}
    assert format_label_set(labels) == '{instance="db-1:9100", job="backup", note="say \\"hi\\""}'
    assert alert_title(labels) == format_label_set(labels)
    assert alert_title({**labels, "alertname": "BackupFailed"}) == "BackupFailed"


# --- any input: an answer or a MatcherError, and what is read prints back to the same matchers --------

_ALPHABET = st.sampled_from([*"{}!=~,\\\"'` \t\nab.:_-0🙂", "\u3000", "\\x41", "\\u00e9", "\\n", "\\t"])


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(st.lists(_ALPHABET, max_size=24).map("".join))
def test_any_input_is_read_or_refused_and_what_is_read_prints_back(text: str) -> None:
    try:
        found = parse_matchers(text)
    except MatcherError:
        return
    printed = ",".join(str(matcher) for matcher in found)
    assert parse_matchers(printed) == found
    assert parse_matchers("{" + printed + "}") == found


_NAME = st.sampled_from(["a", "node", "_x:y", "service.name", '"service.name"', '"foo bar"', "foo🙂", '"a\\"b"', "0a"])
_OP = st.sampled_from(["=", "!=", "=~", "!~", " = ", "=~ "])
_VALUE = st.sampled_from(
    ["x", '"x"', '""', "", '"a,b"', '"\\t"', '"\\\\d+"', "a\\n", '"x\\"y"', "🙂", '"\\u00e9"', "a b", "[a-z]+", "x}"]
)
_MATCHER = st.tuples(_NAME, _OP, _VALUE).map("".join)


@settings(max_examples=3000, derandomize=True, deadline=None)
@given(
    st.lists(_MATCHER, max_size=4),
    st.sampled_from([",", ", ", " , ", ",,"]),
    st.sampled_from([("", ""), ("{", "}"), ("{", ""), ("", "}"), (" {", "} ")]),
    st.booleans(),
)
def test_matcher_lists_are_read_or_refused_and_print_back(
    items: list[str], comma: str, braces: tuple[str, str], trailing: bool
) -> None:
    text = braces[0] + comma.join(items) + ("," if trailing else "") + braces[1]
    try:
        found = parse_matchers(text)
    except MatcherError:
        return
    printed = ",".join(str(matcher) for matcher in found)
    assert parse_matchers(printed) == found
