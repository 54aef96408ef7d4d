"""Alertmanager's UTF-8 matcher grammar (its ``matcher/parse``, 0.27+): text -> (name, op, value).

Grammar, as Alertmanager reads it::

    matchers := ["{"] [matcher ("," matcher)* [","]] ["}" if and only if "{" opened] end
    matcher  := term op term          op := "=" | "!=" | "=~" | "!~"
    term     := '"' Go string literal '"' | run of non-reserved characters

Reserved characters are white space (Go's ``unicode.IsSpace``) and ``{ } ! = ~ , \\ " ' ```; an
unquoted term is any run of other characters (``foo🙂``, ``service.name``, ``[a-z]+``). A quoted
term is unescaped as a Go string literal (``\\t``, ``\\x41``, ``\\u00e9``, ``\\U0001f642``, octal;
``\\d`` and a raw line feed are errors) and must then be valid UTF-8. White space between terms
is ignored. Only the grammar lives here: building and checking matchers is `alertrouter.labels`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["GO_SPACE", "RESERVED", "GrammarError", "parse_terms"]

# Go's unicode.IsSpace: the Latin-1 spaces and the Unicode White_Space property (Python's
# str.isspace also counts U+001C..U+001F, which Go does not).
GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
RESERVED = frozenset(GO_SPACE) | frozenset("{}!=~,\\\"'`")
_SIMPLE_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, '"': 34}
_HEX = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")


class GrammarError(ValueError):
    """The input is not in the UTF-8 grammar; the message gives the 1-based column like Alertmanager."""


class _Kind(enum.Enum):
    OPEN = "{"
    CLOSE = "}"
    COMMA = ","
    EQ = "="
    NE = "!="
    RE = "=~"
    NRE = "!~"
    QUOTED = "quoted"
    UNQUOTED = "unquoted"


_OPERATORS = (_Kind.EQ, _Kind.NE, _Kind.RE, _Kind.NRE)
_TERMS = (_Kind.QUOTED, _Kind.UNQUOTED)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: _Kind
    text: str
    column: int  # 0-based character offset of the token's start

    def where(self) -> str:
        return f"{self.column}:{self.column + len(self.text)}: {self.text}"


def _tokens(text: str) -> list[_Token]:
    out: list[_Token] = []
    i, end = 0, len(text)
    while i < end:
        char = text[i]
        if char in GO_SPACE:
            i += 1
        elif char in "{},":
            out.append(_Token(_Kind(char), char, i))
            i += 1
        elif char == "=":
            size = 2 if text.startswith("=~", i) else 1
            out.append(_Token(_Kind(text[i : i + size]), text[i : i + size], i))
            i += size
        elif char == "!":
            op = text[i : i + 2]
            if op not in ("!=", "!~"):
                raise GrammarError(f"{i}:{i + len(op)}: {op}: expected one of '=~' after '!'")
            out.append(_Token(_Kind(op), op, i))
            i += 2
        elif char == '"':
            j, escaped = i + 1, False
            while j < end and (escaped or text[j] != '"'):
                escaped = not escaped and text[j] == "\\"
                j += 1
            if j >= end:
                raise GrammarError(f'{i}:{end}: {text[i:]}: missing end "')
            out.append(_Token(_Kind.QUOTED, text[i : j + 1], i))
            i = j + 1
        elif char not in RESERVED:
            j = i + 1
            while j < end and text[j] not in RESERVED:
                j += 1
            out.append(_Token(_Kind.UNQUOTED, text[i:j], i))
            i = j
        else:
            raise GrammarError(f"{i}:{i + 1}: {char}: invalid input")
    return out


def _go_unquote(body: str) -> str | None:
    """The value of the Go string literal ``"body"``, or None when it is not one or not UTF-8."""
    if "\n" in body:
        return None
    out = bytearray()
    i, end = 0, len(body)
    while i < end:
        char = body[i]
        if char != "\\":
            try:
                out += char.encode()
            except UnicodeEncodeError:  # a lone surrogate is no UTF-8
                return None
            i += 1
            continue
        code = body[i + 1] if i + 1 < end else ""
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
        elif code in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[code]
            digits = body[i + 2 : i + 2 + size]
            if len(digits) != size or not _HEX.issuperset(digits):
                return None
            value = int(digits, 16)
            if code == "x":
                out.append(value)
            elif value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                return None
            else:
                out += chr(value).encode()
            i += 2 + size
        elif code in _OCTAL:
            digits = body[i + 1 : i + 4]
            if len(digits) != 3 or not _OCTAL.issuperset(digits) or int(digits, 8) > 255:
                return None
            out.append(int(digits, 8))
            i += 4
        else:
            return None  # \d, \', \z...: not Go escapes
    try:
        return out.decode()
    except UnicodeDecodeError:
        return None


def _term(token: _Token) -> str:
    if token.kind is _Kind.UNQUOTED:
        return token.text
    value = _go_unquote(token.text[1:-1])
    if value is None:
        raise GrammarError(f"{token.where()}: invalid input (not a Go string literal of valid UTF-8)")
    return value


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokens(text)
        self.pos = 0

    def peek(self) -> _Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, kinds: tuple[_Kind, ...], expected: str) -> _Token:
        token = self.peek()
        if token is None:
            raise GrammarError(f"{len(self.text)}:{len(self.text)}: end of input: {expected}")
        if token.kind not in kinds:
            raise GrammarError(f"{token.column}:{token.column + len(token.text)}: unexpected {token.text}: {expected}")
        self.pos += 1
        return token

    def matcher(self) -> tuple[str, str, str]:
        name = _term(self.take(_TERMS, "expected label name"))
        op = self.take(_OPERATORS, "expected an operator such as '=', '!=', '=~' or '!~'").kind.value
        value = _term(self.take(_TERMS, "expected label value"))
        return name, op, value

    def parse(self) -> list[tuple[str, str, str]]:
        out: list[tuple[str, str, str]] = []
        first = self.peek()
        opened = first is not None and first.kind is _Kind.OPEN
        self.pos += opened
        following = self.peek()
        if following is not None and following.kind is not _Kind.CLOSE:
            while True:
                out.append(self.matcher())
                token = self.peek()
                if token is None or token.kind is _Kind.CLOSE:
                    break
                self.take((_Kind.COMMA,), "expected a comma or close brace")
                token = self.peek()
                if token is None or token.kind is _Kind.CLOSE:
                    break  # a trailing comma
                if token.kind not in _TERMS:
                    self.take(_TERMS, "expected a matcher or close brace after comma")
        token = self.peek()
        if opened:
            self.take((_Kind.CLOSE,), "expected close brace")
        elif token is not None and token.kind is _Kind.CLOSE:
            raise GrammarError(f"{token.where()}: expected opening brace")
        token = self.peek()
        if token is not None:
            raise GrammarError(f"{token.where()}: expected end of input")
        return out


def parse_terms(text: str) -> list[tuple[str, str, str]]:
    """``(name, operator, value)`` per matcher of `text` in the UTF-8 grammar; raises GrammarError.

    ``""`` and ``{}`` give ``[]``; one trailing comma is allowed; a brace must be paired.
    """
    return _Parser(text).parse()
