"""The command line: check-config output and exit codes, --help that explains."""

from __future__ import annotations

from pathlib import Path

import pytest

from alertrouter.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_check_config_ok(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(REPO / "rules")]) == 0
    assert capsys.readouterr().out.startswith("ok: ")


def test_check_config_reports_file_path_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "rules.yml"
    bad.write_text("global:\n  node_labels: []\n")
    assert main(["check-config", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:global.node_labels: must name at least one label" in err


def test_serve_refuses_invalid_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rules.yml").write_text("bogus: 1\n")
    db = tmp_path / "x.db"
    assert main(["serve", "--config", str(tmp_path), "--database-url", f"sqlite+aiosqlite:///{db}"]) == 1
    assert "unknown section" in capsys.readouterr().err
    assert not db.exists()  # refused before touching the store


def test_help_explains(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for word in ("serve", "check-config", "db", "ALERTROUTER_DATABASE_URL"):
        assert word in out
