"""The package's import graph: imports run one way, from the entry points down to the pure types.

Read from the source with `ast` (every import, function-local ones too), by unit: a subpackage
(`alertrouter.store`) or a module at the package root (`alertrouter.labels`); and by module, for the
rules a unit is too coarse for (what `settings` may read, what the digest may not, cycles of modules).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

import alertrouter

PACKAGE = Path(alertrouter.__file__).resolve().parent

ENTRY_POINTS = {"cli": set(), "app": {"cli"}, "web": {"app"}, "runtime": {"app", "web"}}
PURE = {  # the pure types and helpers every layer may use
    "model",
    "transitions",
    "labels",
    "fingerprints",
    "labelset",
    "utf8_matchers",
    "durations",
    "message",
}
ONLY_FROM = {  # a unit -> the only units it may import
    # the pipeline folds follow-on Xids with the GPU triage: `gpu` is pure domain knowledge (the Xid catalog)
    "pipeline": PURE | {"gpu"},
    "model": set(),
    "message": {"model"},  # the message and its words (and their catalogues): no store, no engine, no channel
    "labels": {"utf8_matchers", "fingerprints"},  # the matcher grammar: text in, (name, op, value) out; UTF-8 bytes
    "utf8_matchers": set(),
    "durations": set(),
    "labelset": set(),
    "store": PURE | {"paths", "pipeline"},
}
NEVER = {  # a unit -> units it must not import
    "channels": {"store", "engine", "delivery", "digest", "ingest", "render"},
    "ingest": {"engine", "delivery", "channels", "render"},
    "engine": {"ingest", "delivery", "channels", "render", "settings"},
    "ruleset": {"channels", "digest", "engine", "delivery", "store", "render"},
    "auth": {"settings"},
    # the node lookup reads Prometheus and hands the engine a snapshot: it never reaches the store or the engine
    "discovery": {"store", "engine", "delivery", "channels", "ingest", "render", "digest", "web", "settings"},
    # the heartbeat monitor raises its alert through ingest (stored, then decided by the engine like any)
    "liveness": {"engine", "delivery", "channels", "render", "digest", "web", "settings"},
    # the process's own machinery (loops, logs, the collector, checkpoints, the scheduler) serves every stage
    # and is served by none of those that use it
    "process": {"engine", "ingest", "delivery", "channels", "web", "discovery", "liveness", "cli", "app"},
    # the XID catalogue and what a GPU fault means: read by messages, the console and the digest
    # (nor the pipeline, which reads it: the folding of follow-on Xids)
    "gpu": {"store", "engine", "delivery", "channels", "ingest", "render", "digest", "web", "settings", "pipeline"},
}
ROOT_MAX = 13  # the package root: entry points and the few pure primitives; the rest lives in its stage's package
# Settings hold values: they read environment variables and check their shape with these modules of
# pure functions (no I/O, no state, nothing else of alertrouter); what is built from them (an
# `Authenticator`, a `Database`) is built by the entry points.
SETTINGS_READ = {
    "alertrouter.durations",  # "15m", "1h30m"
    "alertrouter.paths",  # the shipped rules directory
    "alertrouter.auth.passwords",  # a token's length, a password hash's format, name:value lists
    "alertrouter.store.urls",  # a database URL as people write it -> the async driver's
}
# The digest reads the week through `store/` functions, never with its own queries
DIGEST_NEVER = {"sqlalchemy", "alertrouter.store.tables"}


def unit_of(module: str) -> str:
    return module.split(".")[1]


def imports() -> dict[str, set[str]]:
    """unit -> the other units it imports."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if len(parts) == 2 and parts[1] == "__init__":
            continue
        source = unit_of(".".join(parts))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] if node.module != "alertrouter" else [f"alertrouter.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                if name.startswith("alertrouter.") and (target := unit_of(name)) != source:
                    graph[source].add(target)
    return graph


GRAPH = imports()


def module_imports() -> dict[str, set[str]]:
    """Module -> every name it imports: an alertrouter module where one is named (`from alertrouter.store
    import bulk` is `alertrouter.store.bulk`), else the dotted name (`sqlalchemy.ext.asyncio`)."""
    paths = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                base = node.module
                names.update(f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
        graph[module] = names - {module}
    return graph


MODULES = module_imports()


def cycles_in(graph: dict[str, set[str]]) -> list[str]:
    """Every cycle met in a depth-first walk of `graph`, as "a -> b -> a"."""
    cycles: list[str] = []
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        for target in sorted(graph.get(node, ())):
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target not in done:
                visit(target, [*path, target])
        done.add(node)

    for node in sorted(graph):
        if node not in done:
            visit(node, [node])
    return cycles


def test_the_graph_is_read() -> None:
    # The checks below would pass on an empty graph: make sure it holds what every reader knows is there.
    assert {"store", "pipeline"} <= GRAPH["engine"]
    assert "runtime" in GRAPH["app"]


def test_units_import_each_other_in_one_direction_only() -> None:
    assert cycles_in(GRAPH) == []


def test_modules_import_each_other_in_one_direction_only() -> None:
    # Inside a unit too: two modules that need each other hold something that belongs in a third
    # (a function-local import counts: it only hides the cycle until the function runs).
    package = {module: {t for t in targets if t in MODULES} for module, targets in MODULES.items()}
    assert "alertrouter.store.bulk" in package["alertrouter.store.escalations"]  # `from alertrouter.store import bulk`
    assert cycles_in(package) == []


def test_settings_read_only_pure_value_modules() -> None:
    assert SETTINGS_READ - set(MODULES) == set()  # a module moved: name it where it now lives
    read = {t for t in MODULES["alertrouter.settings"] if t.startswith("alertrouter")}
    assert read <= SETTINGS_READ
    pure = {module: {t for t in MODULES[module] if t.startswith("alertrouter")} for module in SETTINGS_READ}
    assert pure == {module: set() for module in SETTINGS_READ}


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("alertrouter.digest.")))
def test_the_digest_reads_through_the_store(module: str) -> None:
    reaching = {t for t in MODULES[module] for never in DIGEST_NEVER if t == never or t.startswith(f"{never}.")}
    assert reaching == set()


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
def test_entry_points_are_imported_only_from_above(entry: str) -> None:
    importers = {unit for unit, targets in GRAPH.items() if entry in targets}
    assert importers <= ENTRY_POINTS[entry]


@pytest.mark.parametrize("unit", sorted(ONLY_FROM))
def test_the_lowest_layers_import_only_what_is_below_them(unit: str) -> None:
    assert GRAPH.get(unit, set()) <= ONLY_FROM[unit]


@pytest.mark.parametrize("unit", sorted(NEVER))
def test_a_layer_never_reaches_up(unit: str) -> None:
    assert GRAPH.get(unit, set()) & NEVER[unit] == set()


def test_the_package_root_holds_at_most_a_few_modules() -> None:
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= ROOT_MAX, root
