"""What an import did: what it carried over as it was, what it changed, what it could not carry, and the
environment variables the imported rules read their secrets from."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["EnvRef", "Report"]


class EnvRef(str):
    """A `${NAME:-}` reference written in place of a secret; never `$`-escaped like text carried over."""

    __slots__ = ()

    @classmethod
    def to(cls, name: str) -> EnvRef:
        return cls(f"${{{name}:-}}")


@dataclass
class Report:
    mapped: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unmapped: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)  # variable -> what to set it to

    def secret(self, name: str, what: str) -> EnvRef:
        """The reference to write for a secret, noting the variable (its value is never written)."""
        self.env.setdefault(name, what)
        return EnvRef.to(name)

    def text(self, source: str, out: str) -> str:
        lines = [f"imported {source} into {out}"]
        for title, items in (
            ("mapped exactly", self.mapped),
            ("changed", self.changed),
            ("not mapped", self.unmapped),
        ):
            lines.append(f"{title} ({len(items)}):")
            lines += [f"  - {item}" for item in items] or ["  (none)"]
        lines.append(f"environment variables the rules read secrets from ({len(self.env)}; values not written):")
        lines += [f"  {name}: {what}" for name, what in self.env.items()] or ["  (none)"]
        return "\n".join(lines)
