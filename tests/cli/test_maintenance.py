"""`alertrouter maintenance start|end|list` on both stores: windows written with who and why, listed,
ended; bad input refused naming the field, before the store is touched."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from alertrouter.cli.main import main


@pytest.fixture
def store(database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("ALERTROUTER_DATABASE_URL", database_url)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield database_url
    root.handlers[:] = handlers
    root.setLevel(level)


def test_start_list_end(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["maintenance", "start", "gpu-node-07", "gpu-node-08", "--for", "4h", "--reason", "RMA", "--by", "alice"]
    assert main(argv) == 0
    assert "in maintenance until" in capsys.readouterr().out
    assert main(["maintenance", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["NODE", "STATE", "SINCE", "UNTIL", "BY", "REASON"]
    rows = sorted((line.split()[0], line.split()[1], line.split()[-2], line.split()[-1]) for line in lines[1:])
    assert rows == [("gpu-node-07", "active", "alice", "RMA"), ("gpu-node-08", "active", "alice", "RMA")]

    assert main(["maintenance", "end", "gpu-node-07", "gpu-node-09", "--by", "bob"]) == 1
    out, err = capsys.readouterr()
    assert out == "maintenance ended: gpu-node-07\n"
    assert err == "not in maintenance: gpu-node-09\n"
    assert main(["maintenance", "list"]) == 0
    states = {line.split()[0]: line.split()[1] for line in capsys.readouterr().out.splitlines()[1:]}
    assert states == {"gpu-node-07": "ended", "gpu-node-08": "active"}


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["start", "gpu-node-07", "--for", "soon"], "maintenance start: duration: invalid duration 'soon'"),
        (["start", "gpu-node-07", "--for", "100d"], "maintenance start: duration: at most 90 days"),
        (["start", "gpu-node-07", "--for", "4h", "--reason", "x" * 501], "maintenance start: reason: at most 500"),
        (["start", " ", "--for", "4h"], "maintenance start: nodes: give at least one node"),
    ],
)
def test_bad_input_names_the_field(store: str, capsys: pytest.CaptureFixture[str], argv: list[str], said: str) -> None:
    assert main(["maintenance", *argv]) == 2
    assert capsys.readouterr().err.startswith(said)
    assert main(["maintenance", "list"]) == 0
    assert capsys.readouterr().out == "no node is in maintenance\n"


def test_a_long_name_is_kept_to_the_column(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    long = "x" * 300
    assert main(["maintenance", "start", "gpu-node-07", "--for", "1h", "--by", long]) == 0
    assert main(["maintenance", "end", "gpu-node-07", "--by", long]) == 0
    assert main(["maintenance", "list"]) == 0
    assert "x" * 255 in capsys.readouterr().out


def test_help_explains(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["maintenance", "--help"])
    out = capsys.readouterr().out
    assert "nothing about them is sent" in out
    assert "maintenance start gpu-node-07 gpu-node-08 --for 4h" in out
