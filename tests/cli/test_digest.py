"""`alertrouter digest --preview / --send` wired into the command line."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from alertrouter.cli.main import main
from alertrouter.store.migrate import upgrade
from support.fakes.smtp import FakeSmtp

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A migrated SQLite store and the shipped rules; the logging set up by the command is undone after."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"
    upgrade(url)
    monkeypatch.setenv("ALERTROUTER_DATABASE_URL", url)
    monkeypatch.setenv("ALERTROUTER_CONFIG", str(REPO / "rules"))
    for name in ("SMTP_HOST", "DIGEST_EMAIL"):
        monkeypatch.delenv(name, raising=False)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield url
    root.handlers[:] = handlers
    root.setLevel(level)


def test_preview_writes_standalone_html(store: str, tmp_path: Path) -> None:
    out = tmp_path / "digest.html"
    assert main(["digest", "--preview", "--week", "2026-W47", "--out", str(out)]) == 0
    html = out.read_text()
    assert "<title>告警周报 2026-W47</title>" in html  # the shipped rules: zh-CN (msgstr of "Weekly alert digest")
    assert '<html lang="zh-CN">' in html
    assert html.count('src="data:image/png;base64,') == 3
    assert "cid:" not in html


def test_preview_prints_text(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--preview", "--week", "2026-W53"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("告警周报 2026-W53\n2026年12月28日 周一 – 2027年1月3日 周日 (Asia/Shanghai, 168 小时)")


def test_preview_in_another_language_and_zone(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["digest", "--preview", "--week", "2026-W53", "--language", "en", "--timezone", "Europe/Berlin"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert text.startswith("Weekly alert digest 2026-W53\nMon 28 Dec 2026 – Sun 03 Jan 2027 (Europe/Berlin, 168 hours)")


def test_send_through_an_unconfigured_channel_refuses(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["digest", "--send", "--week", "2026-W47"]) == 1
    assert "email-ops is unconfigured" in capsys.readouterr().err


def test_send_then_resend_only_with_force(
    store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeSmtp() as sink:
        rules = tmp_path / "rules.yml"
        rules.write_text(
            f"route: {{receiver: d}}\nreceivers: [{{name: d, digest: {{channel: m, to: [a@example.com]}}}}]\n"
            f"channels: [{{name: m, type: email, host: 127.0.0.1, port: {sink.port}, security: none,"
            " from: r@example.com}]\n"
        )
        monkeypatch.setenv("ALERTROUTER_CONFIG", str(rules))
        assert main(["digest", "--send", "--week", "2026-W47"]) == 0
        assert main(["digest", "--send", "--week", "2026-W47"]) == 1
        assert "--force resends" in capsys.readouterr().err
        assert main(["digest", "--send", "--week", "2026-W47", "--force"]) == 0
        assert len(sink.messages) == 2


def test_bad_week_is_a_usage_error(store: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["digest", "--preview", "--week", "2025-W53"])
    assert exit_.value.code == 2
    assert "week '2025-W53' does not exist" in capsys.readouterr().err
