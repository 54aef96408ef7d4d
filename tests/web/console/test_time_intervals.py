"""The console shows the time intervals, whether each is active now, and the alerts they mute."""

from __future__ import annotations

from pathlib import Path

from alertrouter.ruleset import load_ruleset
from support.scenario import gpu_labels

from .conftest import running

RULES = """
receivers: [{name: default}, {name: ops}]
time_intervals:
  - name: always
    time_intervals: [{}]
  - name: long-ago
    time_intervals: [{years: ['2001'], weekdays: ['monday:friday'], location: Asia/Shanghai}]
  - name: unused
    time_intervals: []
route:
  receiver: default
  routes:
    - matchers: ['alertname="GPUHighTemp"']
      receiver: ops
      mute_time_intervals: [always]
    - matchers: ['alertname="NodeDown"']
      receiver: ops
      active_time_intervals: [long-ago]
"""


async def test_rules_page_lists_intervals_and_muted_page_says_which(database_url: str, tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(RULES)
    async with running(database_url, ruleset=load_ruleset(tmp_path, {})) as app:
        await app.seed([gpu_labels("gpu-node-07", 0)])
        await app.login()
        html = (await app.client.get("/rules")).text
        table = html.split('id="time-intervals"')[1].split("</table>")[0]
        rows = {r.split('"')[0]: r for r in table.split('data-interval="')[1:]}
        assert set(rows) == {"always", "long-ago", "unused"}
        assert 'data-active="true"' in rows["always"]
        assert '<span class="mono">route.routes[0]</span> mutes' in rows["always"]
        assert 'data-active="false"' in rows["long-ago"]
        assert '<span class="mono">route.routes[1]</span> is active only' in rows["long-ago"]
        assert "weekdays monday:friday; years 2001; in Asia/Shanghai" in rows["long-ago"]
        assert "never (no time_intervals)" in rows["unused"]
        assert "no route" in rows["unused"]

        muted = (await app.client.get("/alerts/muted")).text
        assert "muted by time interval <b>always</b> for ops" in muted
