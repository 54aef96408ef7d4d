"""`alertrouter hash-password`: a password hash for ALERTROUTER_CONSOLE_USERS."""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from alertrouter.auth.passwords import DEFAULT_ITERATIONS, hash_password

__all__ = ["add_hash_password_parser", "cmd_hash_password"]

MIN_LENGTH = 8


def cmd_hash_password(args: argparse.Namespace) -> int:
    """The password from a prompt (twice), or the first line of stdin when it is not a terminal."""
    if sys.stdin.isatty():
        password = getpass.getpass("password: ")
        if password != getpass.getpass("again: "):
            print("hash-password: the passwords differ", file=sys.stderr)
            return 1
    else:
        password = sys.stdin.readline().rstrip("\r\n")
    if len(password) < MIN_LENGTH:
        print(f"hash-password: use at least {MIN_LENGTH} characters", file=sys.stderr)
        return 1
    print(hash_password(password, iterations=args.iterations))
    return 0


def add_hash_password_parser(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "hash-password",
        help="print a password hash for ALERTROUTER_CONSOLE_USERS (prompts, or reads one line of stdin)",
        description="Print pbkdf2_sha256$ITERATIONS$SALT$HASH for a console user; put it in "
        "ALERTROUTER_CONSOLE_USERS=name:HASH[,name:HASH]. The password is prompted for twice, or read "
        "from the first line of stdin when stdin is not a terminal.",
    )
    parser.add_argument(
        "--iterations", type=int, default=DEFAULT_ITERATIONS, help=f"PBKDF2 rounds (default {DEFAULT_ITERATIONS})"
    )
    parser.set_defaults(func=cmd_hash_password)
