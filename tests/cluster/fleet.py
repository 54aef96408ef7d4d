"""A simulated GPU fleet: one loopback HTTP server serving every node's node-exporter and dcgm-exporter.

Node `i` (1-based) is `gpu-node-{i:02d}` at the simulated address `10.0.0.{i}`. Its exporters are served
by one threaded server on one port, at distinct paths:

    /nodes/{i}/node-exporter/metrics     node_uname_info{nodename=...}, memory, filesystems
    /nodes/{i}/dcgm-exporter/metrics     DCGM_FI_DEV_* per GPU, with dcgm-exporter's label set

Prometheus scrapes `127.0.0.1:<port>` with `__metrics_path__` set per target; the scrape config gives each
target the `instance` it would have in a real fleet (`10.0.0.7:9100`, `10.0.0.7:9400`), see `box.py`.

Metric names, HELP texts and labels are dcgm-exporter's and node-exporter's own (dcgm-exporter's default
counters, see dcgm.py; `DCGM_FI_DEV_XID_ERRORS` is the last XID code, not a count). Each GPU has a UUID of
its own (`Gpu.uuid`), which `move_gpu` carries to another slot or node. Half the nodes spell the host label
`Hostname` (dcgm-exporter before May 2026), the other half `hostname`, as fleets in the middle of an upgrade
do. A node that goes dark answers 503 on both paths, so Prometheus records `up == 0` for both targets and
the node's series go stale, as when a rack loses power.

Other ways a node shows up or goes away, each one switch on the node:
- `dcgm_down`: only its dcgm-exporter answers 503 (the exporter crashed, node-exporter still up).
- A node listed in `Fleet(listeners=...)` is served on a loopback port of its own; `refuse` closes that
  listening socket, so a scrape gets "connection refused" (a TCP reset, as from a host whose exporters
  are gone) rather than an HTTP answer; `power_on` listens on the same port again.
- `target_labels`: per exporter, labels its scrape target carries (box.py puts them in the scrape config, over
  the bare-metal `instance`): a `region`, a Kubernetes pod IP as `instance`, a relabelled `node`.
- `host_name`: what dcgm-exporter writes in its `Hostname`/`hostname` label (the node's name unless set,
  e.g. the dcgm-exporter pod's name under older GPU Operator charts).
- `rma_csv`, `err_labels`: the node's dcgm-exporter also exports the RMA fields a site enables in its counters
  CSV, and err_code/err_msg on its XID series (dcgm.py); `set_gpus` and `nvlink_errors` drive them.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cluster.dcgm import NVLINK_COUNTERS, Gpu, exposition, labels_text, number

__all__ = ["Fleet", "Gpu", "Node"]

GIB = 1024**3


@dataclass
class Node:
    index: int
    gpus: list[Gpu]
    host_label: str  # "Hostname" or "hostname": the spelling of this node's dcgm-exporter
    mem_total: int = 2048 * GIB
    mem_available: int = 1500 * GIB
    disk_size: int = 3840 * 10**9
    disk_avail: int = 2900 * 10**9
    dark: bool = False
    dcgm_down: bool = False
    booted: float = field(default=1_790_000_000.0)
    target_labels: dict[str, dict[str, str]] = field(default_factory=dict)  # exporter -> scrape target labels
    host_name: str | None = None  # dcgm-exporter's host label value; None: the node's name
    rma_csv: bool = False  # its counters CSV enables retired pages, NVLink errors, ROW_REMAP_PENDING
    err_labels: bool = False  # err_code/err_msg on DCGM_FI_DEV_XID_ERRORS (dcgm-exporter 3.3.6 and later)

    @property
    def name(self) -> str:
        return f"gpu-node-{self.index:02d}"

    @property
    def ip(self) -> str:
        return f"10.0.0.{self.index}"

    def dcgm_metrics(self) -> str:
        return exposition(
            self.gpus,
            host=(self.host_label, self.host_name or self.name),
            started=self.booted,
            rma_csv=self.rma_csv,
            err_labels=self.err_labels,
        )

    def node_metrics(self) -> str:
        uname = {
            "domainname": "(none)",
            "machine": "x86_64",
            "nodename": self.name,
            "release": "5.15.0-91-generic",
            "sysname": "Linux",
            "version": "#101-Ubuntu SMP Tue Nov 14 13:30:08 UTC 2023",
        }
        root = {"device": "/dev/nvme0n1p2", "fstype": "ext4", "mountpoint": "/"}
        run = {"device": "tmpfs", "fstype": "tmpfs", "mountpoint": "/run"}
        lines = [
            "# HELP node_uname_info Labeled system information as provided by the uname system call.",
            "# TYPE node_uname_info gauge",
            f"node_uname_info{labels_text(uname)} 1",
            "# HELP node_boot_time_seconds Node boot time, in unixtime.",
            "# TYPE node_boot_time_seconds gauge",
            f"node_boot_time_seconds {number(self.booted)}",
            "# HELP node_memory_MemAvailable_bytes Memory information field MemAvailable_bytes.",
            "# TYPE node_memory_MemAvailable_bytes gauge",
            f"node_memory_MemAvailable_bytes {number(self.mem_available)}",
            "# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.",
            "# TYPE node_memory_MemTotal_bytes gauge",
            f"node_memory_MemTotal_bytes {number(self.mem_total)}",
            "# HELP node_filesystem_avail_bytes Filesystem space available to non-root users in bytes.",
            "# TYPE node_filesystem_avail_bytes gauge",
            f"node_filesystem_avail_bytes{labels_text(root)} {number(self.disk_avail)}",
            f"node_filesystem_avail_bytes{labels_text(run)} {number(200 * 2**20)}",
            "# HELP node_filesystem_size_bytes Filesystem size in bytes.",
            "# TYPE node_filesystem_size_bytes gauge",
            f"node_filesystem_size_bytes{labels_text(root)} {number(self.disk_size)}",
            f"node_filesystem_size_bytes{labels_text(run)} {number(205 * 2**20)}",
            "# HELP node_filesystem_readonly Filesystem read-only status.",
            "# TYPE node_filesystem_readonly gauge",
            f"node_filesystem_readonly{labels_text(root)} 0",
            f"node_filesystem_readonly{labels_text(run)} 0",
        ]
        return "\n".join(lines) + "\n"


class Fleet:
    """`nodes` simulated nodes of `gpus` GPUs each, served from one loopback port once started.

    Change a node under `with fleet.lock:` (or through the helpers), so one scrape never sees half a change.
    `scrapes` counts answered scrapes per path, for tests that wait for Prometheus to have seen a change.
    """

    def __init__(self, nodes: int, gpus: int = 8, *, listeners: Iterable[int] = ()) -> None:
        self.nodes = [
            Node(i, [Gpu(uuid=_uuid(i, g)) for g in range(gpus)], "Hostname" if i % 2 else "hostname")
            for i in range(1, nodes + 1)
        ]
        self.lock = threading.Lock()
        self.scrapes: dict[str, int] = {}
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._own: dict[int, _Listener] = {i: _Listener(self) for i in listeners}

    def node(self, index: int) -> Node:
        return self.nodes[index - 1]

    def set_gpus(self, index: int, gpus: Iterable[int], **values: Any) -> None:
        """Set fields of `Gpu` (temp=, xid=, fb_used=, util=, power=, row_remap_failure=, retired_dbe=, ...)
        on some GPUs of node `index`."""
        with self.lock:
            for g in gpus:
                for name, value in values.items():
                    if name not in Gpu.__dataclass_fields__:
                        raise AttributeError(f"Gpu has no field {name!r}")
                    setattr(self.node(index).gpus[g], name, value)

    def nvlink_errors(self, index: int, gpus: Iterable[int], counter: str, per_second: float) -> None:
        """From now on the NVLink error `counter` (crc_flit, crc_data, replay, recovery) of these GPUs of node
        `index` grows `per_second`; 0 stops it, and what it counted stays."""
        attr = f"nvlink_{counter}"
        if attr not in NVLINK_COUNTERS:
            raise AttributeError(f"no NVLink error counter {counter!r}")
        now = time.time()
        with self.lock:
            for g in gpus:
                gpu = self.node(index).gpus[g]
                setattr(gpu, attr, getattr(gpu, attr).rising(per_second, now))

    def move_gpu(self, one: tuple[int, int], other: tuple[int, int]) -> None:
        """Swap the GPUs at two (node, slot) places, as boards moved by hand: each keeps its UUID and state."""
        with self.lock:
            (a, i), (b, j) = one, other
            first, second = self.node(a).gpus, self.node(b).gpus
            first[i], second[j] = second[j], first[i]

    def go_dark(self, indexes: Iterable[int]) -> None:
        """Power off these nodes at once: both their exporters stop answering (503)."""
        with self.lock:
            for i in indexes:
                self.node(i).dark = True

    def power_on(self, indexes: Iterable[int]) -> None:
        """Both exporters of these nodes answer again (a node refusing connections listens again)."""
        with self.lock:
            for i in indexes:
                self.node(i).dark = False
        for i in indexes:
            if i in self._own:
                self._own[i].start()

    def refuse(self, indexes: Iterable[int]) -> None:
        """These nodes (each with a listener of its own) stop listening: every scrape is refused."""
        for i in indexes:
            self._own[i].stop()

    def set_dcgm_down(self, index: int, down: bool = True) -> None:
        """Node `index`'s dcgm-exporter stops (or starts again) answering; node-exporter is untouched."""
        with self.lock:
            self.node(index).dcgm_down = down

    def address_of(self, node: Node) -> str:
        """host:port Prometheus scrapes for this node's exporters."""
        own = self._own.get(node.index)
        return own.address if own is not None else self.address

    def targets(self, exporter: str) -> Iterator[tuple[Node, str]]:
        """(node, metrics path) of every node for "node-exporter" or "dcgm-exporter"."""
        for node in self.nodes:
            yield node, f"/nodes/{node.index}/{exporter}/metrics"

    @property
    def address(self) -> str:
        assert self._server is not None, "not started"
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def _render(self, path: str) -> tuple[int, str]:
        parts = path.strip("/").split("/")
        if len(parts) != 4 or parts[0] != "nodes" or parts[3] != "metrics" or not parts[1].isdigit():
            return 404, "not found\n"
        index, exporter = int(parts[1]), parts[2]
        if not 1 <= index <= len(self.nodes) or exporter not in ("node-exporter", "dcgm-exporter"):
            return 404, "not found\n"
        with self.lock:
            node = self.node(index)
            if node.dark or (node.dcgm_down and exporter == "dcgm-exporter"):
                return 503, "exporter is down\n"
            text = node.node_metrics() if exporter == "node-exporter" else node.dcgm_metrics()
            self.scrapes[path] = self.scrapes.get(path, 0) + 1
        return 200, text

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fleet = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                status, text = fleet._render(self.path.split("?", 1)[0])
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def start(self) -> Fleet:
        self._server, self._thread = _serve(self._handler(), 0)
        for own in self._own.values():
            own.start()
        return self

    def stop(self) -> None:
        for own in self._own.values():
            own.stop()
        if self._server is not None:
            _close(self._server, self._thread)

    def __enter__(self) -> Fleet:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _uuid(node: int, slot: int) -> str:
    """The UUID of the GPU first found at `slot` of node `node` (as e2e.harness.gpu_labels names it)."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"gpu-node-{node:02d}/{slot}"))


class _Server(ThreadingHTTPServer):
    """Keeps its open connections, so closing it also drops Prometheus's kept-alive ones."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self.connections: set[socket.socket] = set()

    def process_request(self, request: Any, client_address: Any) -> None:
        self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        self.connections.discard(request)
        super().shutdown_request(request)


def _serve(handler: type[BaseHTTPRequestHandler], port: int) -> tuple[_Server, threading.Thread]:
    server = _Server(("127.0.0.1", port), handler)
    thread = threading.Thread(target=lambda: server.serve_forever(poll_interval=0.05), daemon=True)
    thread.start()
    return server, thread


def _close(server: _Server, thread: threading.Thread | None) -> None:
    server.shutdown()
    server.server_close()  # the listening socket is closed: new connections are refused
    for conn in list(server.connections):  # and the open ones are cut, as by a host that is gone
        with contextlib.suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
    if thread is not None:
        thread.join(5)


class _Listener:
    """One node's own port: the same handler as the shared server, on a port that can stop listening."""

    def __init__(self, fleet: Fleet) -> None:
        self._fleet = fleet
        self._port = 0
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        assert self._port, "not started"
        return f"127.0.0.1:{self._port}"

    def start(self) -> None:
        if self._server is None:  # the first start picks a free port; later ones take the same port again
            self._server, self._thread = _serve(self._fleet._handler(), self._port)
            self._port = self._server.server_address[1]

    def stop(self) -> None:
        if self._server is not None:
            _close(self._server, self._thread)
            self._server = self._thread = None
