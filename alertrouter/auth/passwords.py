"""Console password hashes: `pbkdf2_sha256$iterations$salt$hash` made and checked with hashlib alone."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable

__all__ = [
    "DEFAULT_ITERATIONS",
    "PasswordFormatError",
    "check_format",
    "check_token",
    "hash_password",
    "parse_pairs",
    "verify_password",
]

DEFAULT_ITERATIONS = 600_000  # OWASP's 2023 figure for PBKDF2-HMAC-SHA256
_SCHEME = "pbkdf2_sha256"
_MIN_ITERATIONS = 1_000
MIN_TOKEN_LENGTH = 16


class PasswordFormatError(ValueError):
    """A stored hash that is not `pbkdf2_sha256$iterations$salt$hash`."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)


def hash_password(password: str, *, iterations: int = DEFAULT_ITERATIONS, salt: bytes | None = None) -> str:
    if not password:
        raise ValueError("empty password")
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return f"{_SCHEME}${iterations}${_b64(salt)}${_b64(digest)}"


def check_format(encoded: str) -> tuple[int, bytes, bytes]:
    """(iterations, salt, digest) of a stored hash; raises PasswordFormatError (the hash is not echoed)."""
    parts = encoded.split("$")
    if len(parts) != 4 or parts[0] != _SCHEME or not parts[1].isdigit():
        raise PasswordFormatError("expected pbkdf2_sha256$iterations$salt$hash (see `alertrouter hash-password`)")
    iterations = int(parts[1])
    if iterations < _MIN_ITERATIONS:
        raise PasswordFormatError(f"at least {_MIN_ITERATIONS} iterations")
    try:
        return iterations, _unb64(parts[2]), _unb64(parts[3])
    except ValueError:
        raise PasswordFormatError("salt and hash must be base64") from None


def verify_password(password: str, encoded: str) -> bool:
    """Whether `password` matches the stored hash; the digests are compared in constant time."""
    iterations, salt, expected = check_format(encoded)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return hmac.compare_digest(digest, expected)


def parse_pairs(text: str, *, what: str, check: Callable[[str], object]) -> dict[str, str]:
    """`name:value[,name:value...]` -> {name: value}; `check(value)` raises ValueError for a bad value.
    Errors name the entry by position and name, never the value (it is a secret)."""
    out: dict[str, str] = {}
    for i, entry in enumerate(text.split(","), start=1):
        name, sep, value = entry.strip().partition(":")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise ValueError(f"{what} entry {i}: expected name:value")
        if name in out:
            raise ValueError(f"{what} entry {i}: {name!r} appears twice")
        try:
            check(value.strip())
        except ValueError as exc:
            raise ValueError(f"{what} entry {i} ({name}): {exc}") from None
        out[name] = value.strip()
    return out


def check_token(token: str) -> None:
    """A machine credential long enough not to be guessed: `MIN_TOKEN_LENGTH` characters that are not
    whitespace (16 spaces are no secret), and none at either end (a header's value is read stripped,
    so such a token could never be presented). The message never quotes the token."""
    if len(token) - sum(c.isspace() for c in token) < MIN_TOKEN_LENGTH:
        raise ValueError(
            f"needs at least {MIN_TOKEN_LENGTH} characters that are not whitespace (e.g. `openssl rand -hex 24`)"
        )
    if token != token.strip():
        raise ValueError("must not start or end with whitespace")
