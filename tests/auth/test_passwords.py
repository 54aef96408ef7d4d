"""Console password hashes and the credential settings that hold them."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from alertrouter.auth.passwords import PasswordFormatError, hash_password, parse_pairs, verify_password
from alertrouter.settings import Settings


def test_hash_and_verify() -> None:
    encoded = hash_password("correct horse", iterations=1000)
    scheme, iterations, salt, digest = encoded.split("$")
    assert (scheme, iterations) == ("pbkdf2_sha256", "1000")
    assert salt
    assert digest
    assert verify_password("correct horse", encoded)
    assert not verify_password("correct horsf", encoded)
    assert not verify_password("", encoded)
    assert hash_password("correct horse", iterations=1000) != encoded  # a fresh salt each time


@pytest.mark.parametrize(
    "encoded",
    [
        "",
        "plain",
        "md5$1000$abc$def",
        "pbkdf2_sha256$10$c2FsdA$ZGln",
        "pbkdf2_sha256$x$c2FsdA$ZGln",
        "pbkdf2_sha256$1000$!!$ZGln",
    ],
)
def test_malformed_hashes_are_refused(encoded: str) -> None:
    with pytest.raises(PasswordFormatError):
        verify_password("anything", encoded)


def test_parse_pairs_names_the_entry_not_the_value() -> None:
    assert parse_pairs("a:1, b:2", what="token", check=lambda _: None) == {"a": "1", "b": "2"}
    with pytest.raises(ValueError, match="entry 2: expected name:value"):
        parse_pairs("a:1,b", what="token", check=lambda _: None)
    with pytest.raises(ValueError, match="'a' appears twice"):
        parse_pairs("a:1,a:2", what="token", check=lambda _: None)


def test_settings_refuse_bad_credentials_without_echoing_them() -> None:
    with pytest.raises(ValidationError) as bad_user:
        Settings(console_users="alice:not-a-hash-SECRETISH")
    assert "user entry 1 (alice)" in str(bad_user.value)
    assert "SECRETISH" not in str(bad_user.value)
    with pytest.raises(ValidationError) as short:
        Settings(api_tokens="ci:tooShortTok")
    assert "at least 16 characters" in str(short.value)
    assert "tooShortTok" not in str(short.value)
    ok = Settings(console_users=f"alice:{hash_password('pw-123456', iterations=1000)}", api_tokens="ci:" + "x" * 24)
    assert ok.console_users is not None


def test_hash_password_command_reads_stdin() -> None:
    cli = [sys.executable, "-m", "alertrouter.cli.main", "hash-password", "--iterations", "1000"]
    done = subprocess.run(cli, input="s3cret-pass\n", capture_output=True, text=True, check=True)
    encoded = done.stdout.strip()
    assert verify_password("s3cret-pass", encoded)
    assert "s3cret-pass" not in done.stdout
    short = subprocess.run(cli, input="short\n", capture_output=True, text=True, check=False)
    assert short.returncode == 1
    assert "at least 8 characters" in short.stderr
