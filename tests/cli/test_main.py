"""The command line: check-config output and exit codes, --help that explains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from alertrouter.cli.main import main

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


FIXTURES = REPO / "tests" / "fixtures"


@pytest.mark.parametrize(
    ("labels", "receivers"),
    [
        (["severity=critical", "region=north"], "critical-north"),
        (["severity=critical"], "oncall-core"),
        (["severity=warning", "region=south"], "ops-south"),
        (["severity=info", "region=south"], "weekly-digest"),
        (["alertname=Unknown"], "weekly-digest"),
    ],
)
def test_routes_test_prints_receivers(labels: list[str], receivers: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routes", "test", "--config", str(REPO / "rules"), *labels]) == 0
    assert capsys.readouterr().out.strip() == receivers


def test_routes_test_expect_fails_on_mismatch(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routes", "test", "--config", str(REPO / "rules"), "--expect", "ops", "severity=critical"]) == 1
    assert "expected ops, got oncall-core" in capsys.readouterr().err


def test_routes_show_draws_the_tree(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["routes", "show", "--config", str(REPO / "rules")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("route  receiver: weekly-digest")
    assert '│   ├── {region="north"}  receiver: critical-north' in out


def test_simulate_json_is_the_documented_object(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "simulate",
            "--config",
            str(REPO / "rules"),
            "--json",
            "--for",
            "5m",
            str(FIXTURES / "webhook_gpu_temp_firing.json"),
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"alerts", "incidents", "notifications"}
    decisions = {a["fingerprint"]: a["decision"] for a in out["alerts"]}
    assert decisions == {
        "1a2b3c4d5e6f7081": "aggregated",
        "21294b4b7cfcccec": "aggregated",
        "c0ffee00c0ffee02": "resolved",
    }
    for alert in out["alerts"]:
        assert {"fingerprint", "labels", "status", "decision", "incident"} <= set(alert)
    (incident,) = out["incidents"]
    assert incident["headline"] == "gpu-node-07: GPUHighTemp on 2/8 GPUs"
    (note,) = out["notifications"]
    assert (note["receiver"], note["reason"]) == ("ops-north", "first")
    assert note["text"].startswith("[WARNING] gpu-node-07: GPUHighTemp on 2/8 GPUs")
    # the payload is applied at its latest timestamp (the resolved alert's endsAt, 08:16:03.5), and the
    # first message waits the group wait (30s) from there
    assert note["at"] == "2026-11-21T08:16:33.517889+00:00"


def test_simulate_reports_bad_payload(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": "4", "alerts": [{"status": "firing", "labels": {}}]}')
    assert main(["simulate", "--config", str(REPO / "rules"), str(bad)]) == 1
    assert f"simulate: {bad}: alerts[0]" in capsys.readouterr().err


def test_simulate_reports_invalid_json_by_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"alerts": [')
    assert main(["simulate", "--config", str(REPO / "rules"), str(bad)]) == 1
    assert f"simulate: {bad}: invalid JSON" in capsys.readouterr().err


def test_check_config_warns_where_only_alertmanagers_classic_parser_reads_a_matcher(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rules = tmp_path / "rules.yml"
    rules.write_text(
        "inhibit_rules:\n  - target_matchers: ['severity=\"info\"', '{\"service.name\"=\"api\"}', 'a=!b']\n"
        "route: {receiver: r}\nreceivers: [{name: r}]\n"
    )
    assert main(["check-config", str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out.startswith("ok: ")
    (warning,) = out.err.splitlines()
    assert warning.startswith(f"warning: {rules}:inhibit_rules[0].target_matchers[2]: 'a=!b': read by the classic")
    assert "'a=\"!b\"'" in warning  # the form Alertmanager's UTF-8 grammar reads the same way
