"""Units of counters and metrics: dimensions with exponents and a scale to base units.

``Unit.parse("GB/s")`` is bytes per second with scale 1e9; adding bytes to bytes per second is
an error, multiplying them is fine. Base dimensions: B, s, FLOP, cycle, TLP, op, entry, 1.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from accelview.model.errors import AccelviewError


class UnitError(AccelviewError):
    """A unit that cannot be parsed, or units that do not fit together."""


_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "Ki": 1024.0, "Mi": 1024.0**2,
           "Gi": 1024.0**3}
# symbol -> (dimension or None for dimensionless, scale to base)
_ATOMS = {
    "B": ("B", 1.0), "byte": ("B", 1.0), "bytes": ("B", 1.0),
    "s": ("s", 1.0), "ms": ("s", 1e-3), "us": ("s", 1e-6), "µs": ("s", 1e-6), "ns": ("s", 1e-9),
    "Hz": ("s", 1.0),  # handled as s^-1 below
    "FLOP": ("FLOP", 1.0), "FLOPs": ("FLOP", 1.0), "cycle": ("cycle", 1.0), "cycles": ("cycle", 1.0),
    "TLP": ("TLP", 1.0), "TLPs": ("TLP", 1.0), "op": ("op", 1.0), "ops": ("op", 1.0),
    "entry": ("entry", 1.0), "entries": ("entry", 1.0),
    "%": (None, 0.01), "1": (None, 1.0), "": (None, 1.0),
}


@dataclass(frozen=True)
class Unit:
    """A physical unit: sorted (dimension, exponent) pairs and the scale to base units."""

    dims: tuple[tuple[str, int], ...] = ()
    scale: float = 1.0

    @staticmethod
    def parse(text: str) -> Unit:
        """Parse ``"GB/s"``, ``"FLOP/B"``, ``"cycles"``, ``"%"``, ``"1"``."""
        text = text.strip()
        num, _, den = text.partition("/")
        u = _parse_product(num)
        for part in filter(None, den.split("/")):
            u = u / _parse_product(part)
        return u

    def __mul__(self, other: Unit) -> Unit:
        return _make(_combine(self.dims, other.dims, 1), self.scale * other.scale)

    def __truediv__(self, other: Unit) -> Unit:
        return _make(_combine(self.dims, other.dims, -1), self.scale / other.scale)

    def same_dimension(self, other: Unit) -> bool:
        """True when the two units measure the same kind of quantity."""
        return self.dims == other.dims

    def __str__(self) -> str:
        if not self.dims:
            return "1"
        num = "·".join(d if e == 1 else f"{d}^{e}" for d, e in self.dims if e > 0) or "1"
        den = "·".join(d if e == -1 else f"{d}^{-e}" for d, e in self.dims if e < 0)
        return f"{num}/{den}" if den else num


def _make(dims: dict[str, int], scale: float) -> Unit:
    return Unit(tuple(sorted((d, e) for d, e in dims.items() if e)), scale)


def _combine(a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...], sign: int) -> dict[str, int]:
    out = dict(a)
    for d, e in b:
        out[d] = out.get(d, 0) + sign * e
    return out


def _parse_product(text: str) -> Unit:
    u = Unit()
    for token in filter(None, re.split(r"[·*]", text.strip())):
        u = u * _parse_atom(token.strip())
    return u


def _parse_atom(token: str) -> Unit:
    if token in _ATOMS:
        return _atom(token, 1.0)
    for prefix in sorted(_PREFIX, key=len, reverse=True):
        rest = token[len(prefix):]
        if prefix and token.startswith(prefix) and rest in _ATOMS and rest not in ("%", "1", ""):
            return _atom(rest, _PREFIX[prefix])
    raise UnitError(f"unknown unit {token!r}")


def _atom(symbol: str, prefix: float) -> Unit:
    dim, scale = _ATOMS[symbol]
    if dim is None:
        return Unit((), scale * prefix)
    if symbol == "Hz":  # per second: 1 MHz is 1e6 s^-1
        return Unit(((dim, -1),), prefix)
    return Unit(((dim, 1),), scale * prefix)
