"""A compact, read-only label set: what the engine keeps of each live alert's labels as stored.

The engine keeps every live alert's labels for as long as it is live (100,000 of them in a big
fleet), and most alerts of a fleet carry the same label names in the same order (dcgm-exporter's
fourteen, node-exporter's few). A dict of fourteen labels costs some 650 bytes, most of it its hash
table; a `LabelSet` keeps only its values, in a tuple, against a table of names shared by every
label set with the same names (about 180 bytes). It is a `Mapping`: `get`, `[]`, `in`, iteration
in the original order, and equality with any mapping (a dict of the same labels is equal to it).
It is not a dict: give `dict(labels)` (or `as_dict`) to what needs one, such as a JSON encoder. The
engine keeps incident summaries as read this way too (their values are not all strings: a value that is
not exactly a `str` is kept as given).

Its `get` is a Python method, slower than a dict's: the stages match on label sets every pass
(`AlertView.labels`), and a full pass took no measurably longer for it (bench_scale.py).
"""

from __future__ import annotations

import sys
from collections.abc import ItemsView, Iterator, Mapping, Sequence, ValuesView
from typing import Any, overload

__all__ = ["LabelSet"]

# Names tuple -> name -> position, shared by every label set with those names, in that order. Bounded:
# label names come from the outside world, so past the bound a new set of names gets its own table.
_SCHEMAS: dict[tuple[str, ...], dict[str, int]] = {}
SCHEMAS_MAX = 10_000


def _schema(names: tuple[str, ...]) -> dict[str, int]:
    schema = _SCHEMAS.get(names)
    if schema is None:
        schema = {sys.intern(name): i for i, name in enumerate(names)}
        if len(_SCHEMAS) < SCHEMAS_MAX:
            _SCHEMAS[names] = schema
    return schema


class LabelSet(Mapping[str, str]):
    """Labels as (shared names, own values); never changed once made."""

    __slots__ = ("_index", "_values")

    _index: dict[str, int]
    _values: tuple[str, ...]

    def __init__(self, labels: Mapping[str, str] = {}) -> None:
        """The labels of `labels`, their values shared with every other copy of the same string in the
        process (`sys.intern`: a JSON parser makes a new string for every value, though most values
        repeat across a fleet; a string is kept only while something refers to it)."""
        self._index = _schema(tuple(labels))
        values = tuple(labels.values())
        try:
            self._values = tuple(map(sys.intern, values))
        except TypeError:  # a value that is not exactly a str (`sys.intern` refuses it) is kept as given
            self._values = tuple(sys.intern(v) if type(v) is str else v for v in values)

    def __getitem__(self, name: str) -> str:
        return self._values[self._index[name]]

    @overload
    def get(self, name: str, /) -> str | None: ...
    @overload
    def get(self, name: str, /, default: str) -> str: ...
    @overload
    def get(self, name: str, /, default: Any) -> Any: ...
    def get(self, name: str, /, default: Any = None) -> Any:
        i = self._index.get(name)
        return default if i is None else self._values[i]

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._values)

    def items(self) -> ItemsView[str, str]:
        return _Items(self)

    def values(self) -> ValuesView[str]:
        return _Values(self)

    def as_dict(self) -> dict[str, str]:
        return dict(zip(self._index, self._values, strict=True))

    def shared(self, others: Sequence[Mapping[str, str]]) -> dict[str, str] | None:
        """The labels this set has with the same value in every one of `others`, in this set's order;
        None unless they are all label sets with the same names in the same order (then it compares
        them position by position: a node incident's eight GPU alerts, every pass that sorts it)."""
        index = self._index
        values = [self._values]
        for other in others:
            if type(other) is not LabelSet or other._index is not index:
                return None
            values.append(other._values)
        width = len(values)
        return {
            name: col[0]
            for name, col in zip(index, zip(*values, strict=True), strict=True)
            if col.count(col[0]) == width
        }

    def __eq__(self, other: object) -> bool:
        if type(other) is LabelSet:
            if self._index is other._index:
                return self._values == other._values
            return self.as_dict() == other.as_dict()
        if isinstance(other, Mapping):
            return self.as_dict() == (other if type(other) is dict else dict(other))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # equal to a dict, which is unhashable

    def __repr__(self) -> str:
        return f"LabelSet({self.as_dict()!r})"

    def __reduce__(self) -> tuple[type[LabelSet], tuple[dict[str, str]]]:
        return LabelSet, (self.as_dict(),)


class _Items(ItemsView[str, str]):
    """A label set's items, iterated without a lookup per name."""

    __slots__ = ()
    _mapping: LabelSet

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return zip(self._mapping._index, self._mapping._values, strict=True)


class _Values(ValuesView[str]):
    __slots__ = ()
    _mapping: LabelSet

    def __iter__(self) -> Iterator[str]:
        return iter(self._mapping._values)
