"""Every state is named once, by its enum: no module compares, filters on or writes a state as a text.

Read from the source with `ast`. A state is a value of one of the enums below; a text equal to one is
flagged where it acts as a state: compared (`==`, `!=`, `in`), passed as a keyword that takes a state
(`status=`, `outcome=`, `result=`, `decision=`, ...), given to `.in_(...)`, or listed in a tuple or
set of states. Dict keys, label and summary keys, and the ingest edge's `Literal[...]` wire
shapes are not states in this sense and are left alone. The API's JSON is unchanged: a `StrEnum`
member serialises as its value.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Iterator
from pathlib import Path

import alertrouter
from alertrouter.model import AlertStatus, AttemptOutcome, DeliveryStatus, OutboxStatus, RunResult, RunStatus
from alertrouter.pipeline.types import Decision
from alertrouter.web.operations import DeadLetterAction

PACKAGE = Path(alertrouter.__file__).resolve().parent
ENUMS: tuple[type[enum.StrEnum], ...] = (
    AlertStatus,
    OutboxStatus,
    DeliveryStatus,
    AttemptOutcome,
    Decision,
    RunStatus,
    RunResult,
    DeadLetterAction,
)
STATES = frozenset(member.value for e in ENUMS for member in e)
KEYWORDS = frozenset({"status", "only_status", "outcome", "result", "decision", "state"})
# Words spelled like a state that belong to another vocabulary: (module, word) -> whose word it is.
OTHER_WORDS = {
    ("web/amv2/silences.py", "pending"): "a silence's state, Alertmanager's word (active, pending, expired)",
    ("discovery/parse.py", "error"): "the status of Prometheus's HTTP API answer (success, error)",
    ("discovery/prometheus.py", "error"): "the status of Prometheus's HTTP API answer (success, error)",
}


def _texts(node: ast.AST) -> Iterator[ast.Constant]:
    """The text constants `node` is or holds as a value (through a conditional or a collection)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, ast.IfExp):
        yield from _texts(node.body)
        yield from _texts(node.orelse)
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            yield from _texts(element)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("frozenset", "set"):
        for arg in node.args:
            yield from _texts(arg)


def _as_states(tree: ast.AST) -> Iterator[ast.Constant]:
    """Text constants used where a state goes."""
    literal_slices = {
        id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript) and ast.unparse(n.value).endswith("Literal")
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            # `"firing" in summary` asks for a key: with `in`, only the container's texts are states
            keyed = all(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
            for operand in node.comparators if keyed else (node.left, *node.comparators):
                yield from _texts(operand)
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in KEYWORDS:
                    yield from _texts(kw.value)
            if isinstance(node.func, ast.Attribute) and node.func.attr == "in_":
                for arg in node.args:
                    yield from _texts(arg)
        elif isinstance(node, ast.Tuple | ast.Set) and id(node) not in literal_slices:
            texts = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            if len(texts) == len(node.elts) >= 2 and set(texts) <= STATES:
                yield from _texts(node)


def state_literals() -> list[str]:
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        for const in _as_states(ast.parse(path.read_text(encoding="utf-8"))):
            if const.value in STATES and (name, const.value) not in OTHER_WORDS:
                found.add(f"{name}:{const.lineno}: {const.value!r}")
    return sorted(found)


def test_no_state_is_written_as_a_text() -> None:
    assert state_literals() == []


def test_the_check_sees_a_state_written_as_a_text() -> None:
    # The check above would pass if it saw nothing: it must flag each shape it looks for.
    source = """
if row.status == "sent": pass
if "firing" in summary and row.status not in ("dead", "capped"): pass
update(session, only_status="pending")
metrics.labels(result="rate_limited")
stmt.where(t.c.decision.in_(("inhibited", "held")))
MUTED = ("inhibited", "silenced")
send(status="split" if x else "error")
"""
    found = {c.value for c in _as_states(ast.parse(source))}
    assert found == {
        "sent",
        "dead",
        "capped",
        "pending",
        "rate_limited",
        "inhibited",
        "held",
        "silenced",
        "split",
        "error",
    }
