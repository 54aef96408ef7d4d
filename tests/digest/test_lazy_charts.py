"""matplotlib (with NumPy and Pillow, tens of MB) is loaded when a digest is drawn, not by `serve`."""

from __future__ import annotations

import subprocess
import sys


def test_the_server_and_cli_start_without_the_chart_libraries() -> None:
    code = (
        "import sys, alertrouter.app, alertrouter.cli.main, alertrouter.digest.send, alertrouter.digest.view\n"
        "print(','.join(m for m in ('matplotlib', 'numpy', 'PIL') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_drawing_a_digest_loads_them() -> None:
    code = (
        "import sys\n"
        "from alertrouter.digest.charts import draw_charts\n"
        "from alertrouter.digest.types import Noise\n"
        "charts = draw_charts([], ['critical'], [], Noise(0, 0, 0, 0, 0, {}, []))\n"
        "print(len(charts), 'matplotlib' in sys.modules, charts[0].png[:4] == b'\\x89PNG')"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["3", "True", "True"]
