"""Writing the imported rules: all files or none, and only rules alertrouter itself loads."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from alertrouter.importer.report import EnvRef
from alertrouter.ruleset import ConfigError, ConfigProblem, load_ruleset

__all__ = ["OutputError", "write_rules"]


class OutputError(Exception):
    """The output directory cannot take the rules, or the rules made do not load (named problems)."""


def _escaped(node: Any) -> Any:
    """Text carried over, `$` doubled where alertrouter would read `$$` or `${` as a reference; `EnvRef`s as
    references. Other `$` (a regex's `$`) are left as written: alertrouter keeps a lone `$`."""
    if isinstance(node, dict):
        return {k: _escaped(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_escaped(v) for v in node]
    if isinstance(node, EnvRef):
        return str(node)
    if isinstance(node, str) and ("$$" in node or "${" in node):
        return node.replace("$", "$$")
    return node


def write_rules(files: dict[str, dict[str, Any]], out: Path, header: str) -> None:
    """Write into a new directory beside `out`, load it as `check-config` does, then rename it to `out`:
    an error leaves nothing behind. `out` must not exist or be an empty directory."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise OutputError(f"{out}: exists and is not an empty directory; nothing written")
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, sections in files.items():
            text = yaml.safe_dump(_escaped(sections), sort_keys=False, allow_unicode=True, width=120)
            (work / name).write_text(header + text, encoding="utf-8")
        try:
            load_ruleset(work, env={})
        except ConfigError as exc:
            problems = [ConfigProblem(p.file.replace(str(work), str(out)), p.path, p.message) for p in exc.problems]
            lines = [f"{out}: alertrouter would refuse the imported rules; nothing written", *map(str, problems)]
            raise OutputError("\n".join(lines)) from None
        if out.exists():
            out.rmdir()
        work.rename(out)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
