"""Alertmanager's fingerprint of a label set (FNV-1a 64, as Prometheus computes it); pure, no I/O."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fnv_c import fnv1a_64  # C: a Python loop over every byte of every alert's labels was far slower

__all__ = ["fingerprint", "fingerprints", "utf8_bytes"]

_SEP = b"\xff"  # never occurs in UTF-8, so name/value boundaries cannot be forged


def utf8_bytes(text: str) -> bytes:
    """UTF-8 bytes; a lone surrogate becomes U+FFFD, as Go's JSON decoder would have made it."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text).encode()


# Alertmanager re-sends every alert of a group each group_interval, and Prometheus every evaluation,
# so most label sets seen are repeats: their fingerprints are remembered (oldest forgotten first).
# The key is the set as sent, names then values in the sender's order: exact, and built in C in a
# fraction of the time of the hashed bytes (the same set in another order is only another key).
_KNOWN: dict[tuple[str, ...], str] = {}
_KNOWN_MAX = 16384


def _label_bytes(labels: Mapping[str, str]) -> bytes:
    """``name 0xFF value 0xFF`` per label, in byte order of names (what Prometheus hashes)."""
    # Code-point order of str equals byte order of their UTF-8, which is what Go sorts by. Names and
    # values are joined with U+0000 and encoded once, then U+0000 becomes 0xFF (which UTF-8 never
    # holds): a few calls in C where encoding and appending each part took four per label.
    names = sorted(labels)
    parts = names * 2
    parts[::2] = names
    parts[1::2] = map(labels.__getitem__, names)
    parts.append("")
    text = "\x00".join(parts)
    if text.count("\x00") == len(parts) - 1:  # no name or value holds a U+0000 of its own
        try:
            return text.encode().replace(b"\x00", _SEP)
        except UnicodeEncodeError:  # a lone surrogate
            pass
    return b"".join(
        part
        for pair in sorted((utf8_bytes(name), utf8_bytes(value)) for name, value in labels.items())
        for part in (pair[0], _SEP, pair[1], _SEP)
    )


def fingerprints(label_sets: Sequence[Mapping[str, str]]) -> list[str]:
    """`fingerprint` of each label set; the remembered ones are not hashed again."""
    keys = [(*labels, *labels.values()) for labels in label_sets]
    missing: dict[tuple[str, ...], Mapping[str, str]] = {}
    for key, labels in zip(keys, label_sets, strict=True):
        if key not in _KNOWN:
            missing.setdefault(key, labels)
    found = {key: f"{fnv1a_64(_label_bytes(labels)):016x}" for key, labels in missing.items()}
    out = [found.get(k) or _KNOWN[k] for k in keys]  # before remembering pushes old keys out
    for key, text in found.items():
        if len(_KNOWN) >= _KNOWN_MAX:
            del _KNOWN[next(iter(_KNOWN))]
        _KNOWN[key] = text
    return out


def fingerprint(labels: Mapping[str, str]) -> str:
    """Alertmanager's alert fingerprint (Prometheus ``LabelSet.Fingerprint``) as ``%016x``.

    FNV-1a 64 over ``name 0xFF value 0xFF`` per label in byte order of names; the empty set
    hashes to the FNV offset basis. It equals the ``fingerprint`` field of webhook payloads.
    """
    return fingerprints((labels,))[0]
