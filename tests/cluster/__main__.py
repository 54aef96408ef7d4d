"""`PYTHONPATH=tests .venv/bin/python -m cluster [--hold]`: start the cluster in a box, run the rack power-loss
scenario, print what went in and what came out per channel; with --hold, keep everything running (URLs
printed) until Ctrl-C. Configs and logs stay in the work directory printed at the start.
"""

from __future__ import annotations

import argparse
import contextlib
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

from cluster.box import DINGTALK_CORE, DINGTALK_OPS, WECOM_KEY, ClusterBox, is_digest
from cluster.rack import DARK, NODES, run_rack
from e2e.harness import TOKEN, read_metric


def _metric(url: str, name: str, **labels: str) -> float:
    return read_metric(httpx.get(url + "/metrics", timeout=10).text, name, **labels)


def figures(box: ClusterBox) -> str:
    prom = box.prometheus.url
    ams = [am.url for am in box.alertmanagers]
    routers = [r.url for r in box.routers]
    v = box.vendors
    digests = sum(is_digest(m) for m in v.smtp.messages)
    decided = Counter((a["alertname"], a["decision"]) for a in box.routers[0].alerts())
    lines = [
        f"fleet: {NODES} nodes x 8 GPUs, {len(DARK)} dark",
        f"prometheus -> alertmanagers: {_metric(prom, 'prometheus_notifications_sent_total'):.0f} alerts sent",
        "alertmanagers -> alertrouter: "
        + ", ".join(f"{_metric(u, 'alertmanager_notifications_total', integration='webhook'):.0f}" for u in ams)
        + " webhooks sent (per peer)",
        "alertrouter replicas: "
        + ", ".join(f"{_metric(u, 'alertrouter_webhooks_received_total'):.0f}" for u in routers)
        + " webhooks received, "
        + ", ".join(f"{_metric(u, 'alertrouter_alerts_received_total'):.0f}" for u in routers)
        + f" alerts received; {box.routers[0].total()} distinct alerts stored",
        "stored by alertname (decision): "
        + ", ".join(f"{name} {n} ({decision})" for (name, decision), n in sorted(decided.items())),
        f"out: dingtalk-core {len(v.dingtalk.messages(DINGTALK_CORE))}, dingtalk-ops "
        f"{len(v.dingtalk.messages(DINGTALK_OPS))}, wecom-core {len(v.wecom.messages(WECOM_KEY))}, "
        f"sms {len(v.aliyun.sent)}, email {len(v.smtp.messages) - digests}"
        + f" (+ {digests} weekly digest)"
        * bool(digests),
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m cluster", description=__doc__)
    parser.add_argument("--hold", action="store_true", help="keep the box running after the scenario")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="cluster-box-"))
    print(f"work directory: {workdir}")
    started = time.monotonic()
    with ClusterBox(nodes=NODES, workdir=workdir) as box:
        print(f"started in {time.monotonic() - started:.1f}s; running the rack scenario")
        began = time.monotonic()
        run_rack(box)
        print(f"scenario settled in {time.monotonic() - began:.1f}s\n{figures(box)}")
        if args.hold:
            print(f"prometheus {box.prometheus.url}")
            print("alertmanagers " + " ".join(am.url for am in box.alertmanagers))
            print("alertrouter " + " ".join(r.url for r in box.routers) + f" (API token {TOKEN})")
            print("Ctrl-C stops everything")
            with contextlib.suppress(KeyboardInterrupt):
                threading.Event().wait()


if __name__ == "__main__":
    main()
