"""Alertmanager label matchers (= != =~ !~) and label sets written out as Alertmanager writes them; pure, no I/O."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import re2

from alertrouter.fingerprints import utf8_bytes
from alertrouter.utf8_matchers import GO_SPACE, RESERVED, GrammarError, parse_terms

__all__ = [
    "MatchType",
    "Matcher",
    "MatcherError",
    "alert_title",
    "fallback_note",
    "format_label_set",
    "is_valid_label_name",
    "matchers_from_legacy",
    "matches_all",
    "parse_matcher",
    "parse_matchers",
    "parse_matchers_classic",
    "parse_matchers_utf8",
]


class MatchType(enum.Enum):
    EQ = "="
    NE = "!="
    RE = "=~"
    NRE = "!~"


class MatcherError(ValueError):
    """A matcher that cannot be parsed or compiled; the message names the input and the fault."""

    def __init__(self, text: str, reason: str, *, within: str | None = None) -> None:
        where = f" in {within!r}" if within is not None and within != text else ""
        super().__init__(f"invalid matcher {text!r}{where}: {reason}")
        self.text = text
        self.reason = reason
        self.within = within


class _Pattern(Protocol):
    def fullmatch(self, text: bytes) -> object | None: ...


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # RE2 would otherwise print every bad config regex to stderr
_RE2_OPTIONS.never_capture = True  # only "does it match" is ever asked


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _go_escape(value: str) -> str:
    """`value` inside a Go string literal: what the UTF-8 grammar unquotes back to `value`."""
    out = _escape(value)
    return "".join(f"\\x{ord(c):02x}" if ord(c) < 0x20 and c != "\t" else c for c in out)


def _compile(name: str, match_type: MatchType, value: str) -> _Pattern:
    wrapped = f"^(?:{value})$"
    try:
        pattern: _Pattern = re2.compile(wrapped, _RE2_OPTIONS)
    except re2.error as exc:
        detail = exc.args[0] if exc.args else exc
        message = detail.decode(errors="replace") if isinstance(detail, bytes) else str(detail)
        # RE2 appends the whole pattern after ": "; our anchoring wrapper there only confuses.
        message = message.removesuffix(f": {wrapped}")
        text = f'{name}{match_type.value}"{_escape(value)}"'
        raise MatcherError(text, f"invalid regular expression: {message}") from None
    return pattern


@dataclass(frozen=True, slots=True)
class Matcher:
    """One label matcher. An absent label is matched as ``""`` (``foo=""`` = "has no foo").

    Regexes are RE2 (Go's syntax: ``\\z``, ``[[:digit:]]``, ``\\pL``, inline ``(?i)``), anchored
    as ``^(?:value)$``, so ``=~"bar"`` does not match ``foobar`` and ``$`` does not match before
    a trailing newline. Equality and hashing use name, type and value only.
    """

    name: str
    type: MatchType
    value: str
    _regex: _Pattern | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        regex = None
        if self.type in (MatchType.RE, MatchType.NRE):
            regex = _compile(self.name, self.type, self.value)
        object.__setattr__(self, "_regex", regex)

    def __reduce__(self) -> tuple[Callable[[str, MatchType, str], Matcher], tuple[str, MatchType, str]]:
        # The compiled RE2 object cannot be pickled or deep-copied: rebuild from the fields.
        return (Matcher, (self.name, self.type, self.value))

    def matches(self, value: str) -> bool:
        """Whether a label value (``""`` for an absent label) satisfies the matcher."""
        match_type = self.type
        if match_type is MatchType.EQ:
            return value == self.value
        if match_type is MatchType.NE:
            return value != self.value
        assert self._regex is not None
        found = self._regex.fullmatch(utf8_bytes(value)) is not None
        return found if match_type is MatchType.RE else not found

    def matches_labels(self, labels: Mapping[str, str]) -> bool:
        return self.matches(labels.get(self.name, ""))

    def __str__(self) -> str:
        """Alertmanager's form ``name="value"``, or ``"name"="value"`` when the name holds a character
        the UTF-8 grammar reserves (``"foo bar"="baz"``); `parse_matchers` reads it back unchanged."""
        if any(char in RESERVED for char in self.name) or not self.name:
            return f'"{_go_escape(self.name)}"{self.type.value}"{_go_escape(self.value)}"'
        return f'{self.name}{self.type.value}"{_escape(self.value)}"'


def matches_all(matchers: Sequence[Matcher], labels: Mapping[str, str]) -> bool:
    """True when every matcher matches; an empty list matches everything."""
    return all(matcher.matches(labels.get(matcher.name, "")) for matcher in matchers)


# Alertmanager's classic grammar. Go's \s is ASCII [\t\n\f\r ]; the classic parser also allows
# ':' in names, unlike the legacy config maps. '=~' is tried before '=' (leftmost-first).
_WS = "[\t\n\f\r ]*"
_CLASSIC = re.compile(f"{_WS}([a-zA-Z_:][a-zA-Z0-9_:]*){_WS}(=~|=|!=|!~){_WS}(.*?){_WS}", re.DOTALL)
_BEFORE_OP = re.compile(f"{_WS}(.*?){_WS}(?:=|!=|!~)", re.DOTALL)
_LEGACY_NAME = re.compile("[a-zA-Z_][a-zA-Z0-9_]*")
_UNESCAPE = {"n": "\n", '"': '"', "\\": "\\"}


def _unquote(raw: str, text: str) -> str:
    """Value token -> value. Escapes apply quoted or not; an unknown escape keeps its backslash."""
    quoted = raw.startswith('"')
    body = raw[1:] if quoted else raw
    out: list[str] = []
    i, end = 0, len(body)
    while i < end:
        char = body[i]
        if char == "\\" and i + 1 < end:
            nxt = body[i + 1]
            out.append(_UNESCAPE.get(nxt, "\\" + nxt))
            i += 2
            continue
        if char == '"':
            if quoted and i == end - 1:
                return "".join(out)
            raise MatcherError(text, 'unescaped double quote in value (write \\")')
        out.append(char)
        i += 1
    if quoted:
        raise MatcherError(text, "missing closing double quote")
    return "".join(out)


def parse_matcher(text: str) -> Matcher:
    """Parse one classic matcher: ``name="v"``, ``name!=v``, ``name=~"re"``, ``name!~re``.

    Whitespace around each token is dropped; an unquoted value keeps inner spaces
    (``foo = bar baz`` -> ``bar baz``). Braces are not accepted here (see ``parse_matchers``).
    """
    found = _CLASSIC.fullmatch(text)
    if found is None:
        before = _BEFORE_OP.match(text)
        if not text.strip("\t\n\f\r "):
            reason = "empty matcher"
        elif before is None:
            reason = "expected <name><op><value> with op one of =, !=, =~, !~"
        elif not before.group(1):
            reason = "missing label name"
        else:
            reason = f"invalid label name {before.group(1)!r} (must match [a-zA-Z_:][a-zA-Z0-9_:]*)"
        raise MatcherError(text, reason)
    name, op, raw = found.groups()
    value = _unquote(raw, text)
    try:
        value.encode()
    except UnicodeEncodeError:
        raise MatcherError(text, "value is not valid UTF-8 (lone surrogate)") from None
    try:
        return Matcher(name, MatchType(op), value)
    except MatcherError as exc:
        raise MatcherError(text, exc.reason) from None


def _split(body: str) -> list[str]:
    """Split on commas outside double quotes, as Alertmanager does.

    Mirrors its quirk that a comma does not clear a pending backslash, so ``\\,"`` keeps a quote
    from opening or closing; such inputs then fail to parse there as here.
    """
    tokens: list[str] = []
    start, in_quotes, escaped = 0, False, False
    for i, char in enumerate(body):
        if char == ",":
            if not in_quotes:
                tokens.append(body[start:i])
                start = i + 1
        elif char == '"':
            if not escaped:
                in_quotes = not in_quotes
            escaped = False
        elif char == "\\":
            escaped = not escaped
        else:
            escaped = False
    last = body[start:].strip(GO_SPACE)  # Go's strings.TrimSpace
    if last:
        tokens.append(last)
    return tokens


def parse_matchers_classic(text: str) -> list[Matcher]:
    """Parse a comma-separated list such as ``{a="1", b=~"x|y"}``, as Alertmanager's classic parser.

    One leading ``{`` and one trailing ``}`` are optional and stripped independently (``{a=b}}``
    gives value ``b}``). A trailing comma is tolerated (``a=1,`` and ``{a=1, }``); an empty item
    elsewhere (``a=1,,b=2``, ``,``) is an error. ``{}`` and ``""`` give ``[]``.
    """
    body = text.removeprefix("{").removesuffix("}")
    matchers: list[Matcher] = []
    for token in _split(body):
        try:
            matchers.append(parse_matcher(token))
        except MatcherError as exc:
            raise MatcherError(exc.text, exc.reason, within=text) from None
    return matchers


def parse_matchers_utf8(text: str) -> list[Matcher]:
    """Parse with Alertmanager's UTF-8 grammar only (see `alertrouter.utf8_matchers`): quoted or
    UTF-8 label names (``"service.name"="api"``, ``foo🙂=bar``), Go escapes in quoted terms."""
    try:
        terms = parse_terms(text)
    except GrammarError as exc:
        raise MatcherError(text, str(exc)) from None
    try:
        return [Matcher(name, MatchType(op), value) for name, op, value in terms]
    except MatcherError as exc:
        raise MatcherError(exc.text, exc.reason, within=text) from None


def parse_matchers(text: str) -> list[Matcher]:
    """Matchers as Alertmanager (0.27 and later, default mode) reads them everywhere: the UTF-8
    grammar with the classic parser as fallback.

    Alertmanager parses with both; where both succeed with different results (``foo="\\t"``: a tab
    in UTF-8, backslash-t classic) or only the classic one succeeds, the classic result wins, so the
    outcome is the classic result when there is one, else the UTF-8 one, else an error (both reasons).
    """
    try:
        return parse_matchers_classic(text)
    except MatcherError as exc:
        classic_error = exc
    try:
        return parse_matchers_utf8(text)
    except MatcherError as exc:
        utf8_reason = exc.reason
    if utf8_reason == classic_error.reason:  # e.g. the same bad regular expression
        raise classic_error
    reason = f"{classic_error.reason}; nor in the UTF-8 grammar: {utf8_reason}"
    raise MatcherError(classic_error.text, reason, within=classic_error.within)


def fallback_note(text: str) -> str | None:
    """Alertmanager's warning for matchers only the classic parser reads as written (it logs one on
    load); None when the UTF-8 grammar reads `text` the same way, or nothing reads it."""
    try:
        classic = parse_matchers_classic(text)
    except MatcherError:
        return None
    try:
        utf8: list[Matcher] | None = parse_matchers_utf8(text)
    except MatcherError:
        utf8 = None
    if classic == utf8:
        return None
    suggestion = ",".join(str(m) for m in classic) or "{}"
    if utf8 is None:
        return f"read by the classic parser only; write it as {suggestion!r} for Alertmanager's UTF-8 grammar"
    return f"the UTF-8 and classic parsers disagree; the classic reading {suggestion!r} is used"


def is_valid_label_name(name: str) -> bool:
    """Alertmanager's label-name rule in its default (UTF-8) mode: non-empty valid UTF-8
    (``service.name``, ``k8s.pod.name``, ``0foo`` are fine; a lone surrogate is not UTF-8)."""
    if not name:
        return False
    try:
        name.encode()
    except UnicodeEncodeError:
        return False
    return True


def format_label_set(labels: Mapping[str, str]) -> str:
    """``{a="b", c="d"}`` in name order, as Alertmanager prints a label set (empty values left out)."""
    return "{" + ", ".join(f'{name}="{_escape(labels[name])}"' for name in sorted(labels) if labels[name]) + "}"


def alert_title(labels: Mapping[str, str]) -> str:
    """What names an alert to a person: its ``alertname``, or its label set written out when it has
    none (Alertmanager accepts any alert with one label; ``{job="backup", instance="db-1"}``)."""
    return labels.get("alertname") or format_label_set(labels)


def matchers_from_legacy(match: Mapping[str, str] | None, match_re: Mapping[str, str] | None) -> list[Matcher]:
    """Matchers for the deprecated ``match``/``match_re`` maps (e.g. ``source_match``).

    Values are used verbatim (no unescaping). Names must match ``[a-zA-Z_][a-zA-Z0-9_]*`` as
    Alertmanager checks for these maps; no colon, unlike the classic matcher syntax.
    """
    matchers: list[Matcher] = []
    for mapping, match_type in ((match, MatchType.EQ), (match_re, MatchType.RE)):
        for name, value in (mapping or {}).items():
            if _LEGACY_NAME.fullmatch(name) is None:
                text = f'{name}{match_type.value}"{_escape(value)}"'
                hint = str(Matcher(name, match_type, value))
                raise MatcherError(
                    text,
                    f"invalid label name {name!r}: the legacy match maps take only [a-zA-Z_][a-zA-Z0-9_]*"
                    f" (as in Alertmanager); write it as a matcher instead: {hint}",
                )
            matchers.append(Matcher(name, match_type, value))
    return matchers
