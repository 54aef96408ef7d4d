"""Machine credentials made of whitespace, or padded with it, are refused at startup naming the variable,
never echoing the value: 16 spaces pass a length check and guard nothing, and a token ending in a space
could never be presented (a header's value is read stripped)."""

from __future__ import annotations

import os

import pytest
from pydantic import ValidationError

from alertrouter.auth.passwords import check_token
from alertrouter.settings import Settings

SINGLE = ["ALERTROUTER_BEARER_TOKEN", "ALERTROUTER_BASIC_PASSWORD", "ALERTROUTER_SECRET_KEY"]
THIN_WORDS = "needs at least 16 characters that are not whitespace"
PADDED_WORDS = "must not start or end with whitespace"
THIN = [
    pytest.param(" " * 16, THIN_WORDS, id="16-spaces"),
    pytest.param("\t" * 24, THIN_WORDS, id="tabs"),
    pytest.param("a b c d e f g h i j", THIN_WORDS, id="10-of-19-not-whitespace"),
    pytest.param(" 0123456789abcdef", PADDED_WORDS, id="leading-space"),
    pytest.param("0123456789abcdef\t", PADDED_WORDS, id="trailing-tab"),
]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("ALERTROUTER_"):
            monkeypatch.delenv(name)


def _refusal(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]) -> str:
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValidationError) as caught:
        Settings()
    return str(caught.value)


@pytest.mark.parametrize("name", SINGLE)
@pytest.mark.parametrize(("value", "why"), THIN)
def test_a_whitespace_secret_is_refused_by_name(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, why: str
) -> None:
    env = {name: value}
    if name == "ALERTROUTER_BASIC_PASSWORD":
        env["ALERTROUTER_BASIC_USERNAME"] = "am"
    message = _refusal(monkeypatch, env)
    assert f"{name} {why}" in message
    if value.strip():
        assert value.strip() not in message


@pytest.mark.parametrize("value", ["a b c d e f g h i j", "0123 4567 89ab cde"])
def test_a_thin_api_token_is_refused_by_entry(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    message = _refusal(monkeypatch, {"ALERTROUTER_API_TOKENS": f"deploy:0123456789abcdef0123,ci:{value}"})
    assert f"ALERTROUTER_API_TOKENS token entry 2 (ci): {THIN_WORDS}" in message
    assert value not in message


def test_sixteen_visible_characters_are_enough_wherever_the_spaces_are() -> None:
    check_token("0123456789abcdef")
    check_token("0123 4567 89ab cdef")
    for thin in (" " * 16, "0123 4567 89ab cde"):
        with pytest.raises(ValueError, match=THIN_WORDS):
            check_token(thin)
    for padded in (" 0123456789abcdef", "0123456789abcdef\n"):
        with pytest.raises(ValueError, match=PADDED_WORDS):
            check_token(padded)
