"""Docstrings and comments say why, not how fast: a measured figure belongs to its benchmark's results
(tests/bench/results/), where it is dated and reproducible, not to design text that outlives it."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import alertrouter

PACKAGE = Path(alertrouter.__file__).resolve().parent
# A time, a rate or a size as a measurement is written: "70 ms", "1.5 us", "10,265 alerts/s", "55 MB".
MEASURED = re.compile(r"\b\d[\d,.]*\s?(?:ms|us|µs|ns|alerts/s|kB|MB|GB)\b")
ALLOWED = {  # facts about the outside world, not measurements of alertrouter
    "process/courtesy.py": "the kernel's timer slack default",
}


def figures(source: str) -> list[str]:
    """The comments and docstrings of `source` that quote a measured figure, as `line: text`."""
    found = []
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for i, token in enumerate(tokens):
        is_docstring = token.type == tokenize.STRING and (
            i == 0 or tokens[i - 1].type in (tokenize.INDENT, tokenize.NEWLINE, tokenize.NL, tokenize.DEDENT)
        )
        if (token.type == tokenize.COMMENT or is_docstring) and MEASURED.search(token.string):
            found.append(f"{token.start[0]}: {MEASURED.search(token.string).group(0)}")  # type: ignore[union-attr]
    return found


def test_the_finder_sees_comments_and_docstrings_only() -> None:
    source = 'def f():\n    """Took 70 ms."""\n    x = "5 ms"  # was 1.5 us\n    return x\n'
    assert figures(source) == ["2: 70 ms", "3: 1.5 us"]


def test_no_measured_figure_in_docstrings_or_comments() -> None:
    quoted = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        if name not in ALLOWED and (found := figures(path.read_text(encoding="utf-8"))):
            quoted[name] = found
    assert not quoted, f"measured figures in design text (move them to tests/bench/results/): {quoted}"
