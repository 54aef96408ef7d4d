"""Renders the rules schema (`alertrouter.ruleset` models) as the key tables of docs/en/configuration.md.

The tables sit between two marker lines in that page, so the prose around them stays hand-written and every key
the schema accepts is documented with its default and its `Field(description=...)`. Run it after changing the
schema: `.venv/bin/python tests/support/config_reference.py` rewrites the section, and
`tests/docs/test_configuration.py` fails while the page and the schema disagree. Keys are shown by alias
(`global`, not `global_`); a model reached from several places (a matcher list, a duration) is listed once.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from datetime import timedelta
from enum import Enum
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from alertrouter.durations import format_duration
from alertrouter.ruleset.schema import RuleFile

__all__ = ["BEGIN", "END", "PAGE", "field_key", "models", "render", "update_page", "walk_keys"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "en" / "configuration.md"
BEGIN = "<!-- BEGIN GENERATED: tests/support/config_reference.py -->"
END = "<!-- END GENERATED -->"


def field_key(name: str, field: FieldInfo) -> str:
    """The key a rules file writes: the alias where there is one."""
    return field.alias or name


def _nested(annotation: Any) -> Iterator[type[BaseModel]]:
    """Every model inside a field's type: `list[X]`, `X | None`, `dict[str, X]`, `Annotated[...]`, unions."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation
        return
    origin = get_origin(annotation)
    if origin is Annotated:
        yield from _nested(get_args(annotation)[0])
        return
    if origin in (Union, types.UnionType, list, tuple, dict, set, frozenset) or origin is not None:
        for arg in get_args(annotation):
            yield from _nested(arg)


def _kind(model: type[BaseModel]) -> str | None:
    """The `type:` a channel model is chosen by, if it is one of a union told apart that way."""
    kind = model.model_fields.get("type")
    if kind is not None and get_origin(kind.annotation) is Literal:
        return str(get_args(kind.annotation)[0])
    return None


def _typed(path: str, model: type[BaseModel]) -> str:
    kind = _kind(model)
    return f"{path}(type: {kind})" if kind else path


def models(root: type[BaseModel] = RuleFile) -> list[tuple[str, type[BaseModel]]]:
    """(path, model) for every model reachable from `root`, breadth first, each model once (its first path)."""
    seen: set[type[BaseModel]] = {root}
    order: list[tuple[str, type[BaseModel]]] = [("", root)]
    queue = [("", root)]
    while queue:
        path, model = queue.pop(0)
        for name, field in model.model_fields.items():
            key = field_key(name, field)
            for child in _nested(field.annotation):
                if child in seen:
                    continue
                seen.add(child)
                child_path = f"{_typed(path, model)}.{key}" if path else key
                if get_origin(field.annotation) is list or "list[" in str(field.annotation):
                    child_path += "[]"
                order.append((child_path, child))
                queue.append((child_path, child))
    return order


def walk_keys(root: type[BaseModel] = RuleFile) -> set[str]:
    """Every key of every model reachable from `root`, by alias."""
    return {field_key(name, field) for _, model in models(root) for name, field in model.model_fields.items()}


def _type(annotation: Any) -> str:
    """A short reading of a field's type, as a rules file writes it."""
    if annotation is timedelta:
        return "duration"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "section"
    if annotation in (str, int, bool, float):
        return {str: "text", int: "integer", bool: "true/false", float: "number"}[annotation]
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0])
    if origin is Literal:
        return " \\| ".join(f"`{a}`" for a in args)
    if origin in (Union, types.UnionType):
        parts = [_type(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(parts))
    if origin in (list, tuple):
        inner = _type(args[0]) if args else "value"
        if "Matcher" in str(args[0]) if args else False:
            return "matchers"
        return "list of sections" if inner == "section" else f"list of {inner}"
    if origin is dict:
        return "map of sections" if _type(args[1]) == "section" else "map"
    return getattr(annotation, "__name__", str(annotation)).lower()


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value: Any = field.default_factory()  # type: ignore[call-arg]
    else:
        value = field.default
    if value == "":
        return '`""`'
    if value is PydanticUndefined or value is None or value == [] or value == {}:
        return ""
    if isinstance(value, timedelta):
        return f"`{format_duration(value)}`"
    if isinstance(value, Enum):
        return f"`{value.value}`"
    if isinstance(value, BaseModel):
        return ""
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, list | tuple):
        return "`[" + ", ".join(str(v) for v in value) + "]`"
    return f"`{value}`".replace("|", "\\|")


def _description(field: FieldInfo) -> str:
    text = " ".join((field.description or "").split())
    return text.replace("|", "\\|")


def _title(path: str, model: type[BaseModel]) -> str:
    if not path:
        return "Top level (each `rules/*.yml` file)"
    return f"`{_typed(path, model)}`"


def render() -> str:
    """The generated section: one table per model, keys in the order the schema declares them."""
    out = [
        BEGIN,
        "",
        "Generated from the schema by `tests/support/config_reference.py`; `[]` marks a list of entries.",
        "An empty default means the key is optional and absent unless set; a section used in several places",
        "(a channel's `retry`, an SMS or voice provider) is listed once, under the first place it appears.",
    ]
    for path, model in models():
        out += ["", f"### {_title(path, model)}", "", "| key | type | default | meaning |", "|---|---|---|---|"]
        for name, field in model.model_fields.items():
            cells = [
                f"`{field_key(name, field)}`",
                _type(field.annotation),
                _default(field),
                _description(field),
            ]
            out.append("| " + " | ".join(cells) + " |")
    out += ["", END]
    return "\n".join(out) + "\n"


def update_page(page: Path = PAGE) -> bool:
    """Rewrite the section in `page`; True if it changed."""
    text = page.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    new = head + render().rstrip("\n") + tail
    if new == text:
        return False
    page.write_text(new)
    return True


if __name__ == "__main__":
    changed = update_page()
    print(f"{PAGE}: {'updated' if changed else 'up to date'}")
    sys.exit(0)
