"""How one value prints, in the CLI, the findings and every panel alike: three significant digits
in the unit that suits it, trailing zeros kept ("3.40 µs", "80.0 µs", "1.23 ms"), as Perfetto and
Nsight print durations; whole numbers in the base unit exactly ("830 ns", "12 B")."""

from __future__ import annotations

import math
import operator

MISSING = "—"  # a value that is not a number: no data, or a ratio of nothing

DURATION_UNITS = ((1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s"))
_SI = ((1.0, ""), (1e3, "k"), (1e6, "M"), (1e9, "G"), (1e12, "T"), (1e15, "P"))
_SIZE_UNITS = tuple((scale, f"{prefix}B") for scale, prefix in _SI)
_PREFIXED = "kMGTPmµn"  # a unit that starts with one of these and then B, Hz or FLOP has its prefix already


def significant(x: float, digits: int = 3, max_decimals: int | None = None) -> str:
    """``x`` (finite, ≥ 0) to ``digits`` significant digits (and at most ``max_decimals``),
    trailing zeros kept, never in exponent form; digits before the point are never rounded
    away (1474 stays "1474")."""
    exponent = int(f"{x:.{max(digits, 1) - 1}e}".split("e")[1]) if x else 0
    decimals = max(0, digits - 1 - exponent)
    return f"{x:.{decimals if max_decimals is None else min(decimals, max_decimals)}f}"


def _not_finite(v: float) -> str | None:
    if math.isnan(v):
        return MISSING
    if math.isinf(v):
        return "-∞" if v < 0 else "∞"
    return None


def _scaled(v: float, units: tuple[tuple[float, str], ...], digits: int, base_decimals: int | None = None) -> str:
    """``v`` in the largest of ``units`` (ascending (scale, name) pairs) it reaches after rounding;
    a whole number below the second unit prints exactly in the first, with ``base_decimals`` at most."""
    sign = "-" if v < 0 else ""
    a = abs(v)
    if a.is_integer() and (len(units) == 1 or a < units[1][0]):
        return f"{sign}{int(a)} {units[0][1]}".rstrip()
    i = max((k for k, (scale, _) in enumerate(units) if a >= scale), default=0)
    text = significant(a / units[i][0], digits, base_decimals if i == 0 else None)
    if float(text) >= 1000 and i + 1 < len(units):  # rounded up into the next unit: 999.6 ns is 1.00 µs
        a = float(text) * units[i][0]
        i += 1
        text = significant(a / units[i][0], digits)
    if float(text) == 0:  # a capped base unit rounded to nothing
        return f"0 {units[0][1]}".rstrip()
    return f"{sign}{text} {units[i][1]}".rstrip()


def format_duration(ns: float, digits: int = 3) -> str:
    """A duration (or a time since the trace start) in ns to ``digits`` significant digits, ns to
    one decimal at most (the timebase), 999.6 ns as ``1.00 µs``, a minute up as a clock
    (``4 min 05 s``); NaN prints as ``MISSING``, infinities as ``∞``."""
    ns = float(ns)
    if (bad := _not_finite(ns)) is not None:
        return bad
    text = _scaled(ns, DURATION_UNITS, digits, base_decimals=1)  # a tenth of the 1 ns timebase at most
    if not text.endswith(" s") or abs(float(text.split()[0])) < 60:
        return text
    decimals = max(0, digits - 3)  # at the default: to the second, which is 3 digits of a minute
    total = round(abs(ns) / 1e9, decimals)
    minutes, seconds = divmod(total, 60)
    hours, minutes = divmod(int(minutes), 60)
    sec = f"{seconds:0{2 + decimals + bool(decimals)}.{decimals}f} s"
    clock = f"{hours} h {minutes:02d} min {sec}" if hours else f"{minutes} min {sec}"
    return ("-" if ns < 0 else "") + clock


def format_bytes(n: float, digits: int = 3) -> str:
    """A size in bytes with a decimal prefix, like the GB/s of PCIe and HBM: ``512 B``, ``65.5 kB``."""
    n = float(n)
    return _not_finite(n) or _scaled(n, _SIZE_UNITS, digits)


def format_bandwidth(bytes_per_s: float, digits: int = 3) -> str:
    """A rate in bytes per second: ``26.0 GB/s``, ``4.63 TB/s``."""
    bad = _not_finite(float(bytes_per_s))
    return bad or format_bytes(bytes_per_s, digits) + "/s"


def format_percent(fraction: float, decimals: int = 1) -> str:
    """A fraction (0.575) as a percentage with fixed ``decimals`` so columns line up: ``57.5%``."""
    v = float(fraction) * 100
    if (bad := _not_finite(v)) is not None:
        return bad
    text = f"{v:.{decimals}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    return f"{text}%"


def format_count(n: float) -> str:
    """A count with thousands separators: ``12,345`` (a float is rounded to a whole number)."""
    try:
        return f"{operator.index(n):,}"
    except TypeError:
        v = float(n)
        return _not_finite(v) or f"{round(v):,}"


def format_value(v: float, unit: str = "") -> str:
    """A counter value with its unit, SI-prefixed unless the unit has a prefix already:
    ``4.63 TB/s``, ``57.5%`` (unit ``%``: the value is in percent), ``1474 GB/s``, ``12 B``."""
    v = float(v)
    if unit == "%":
        return format_percent(v / 100)
    if (bad := _not_finite(v)) is not None:
        return bad
    if len(unit) > 1 and unit[0] in _PREFIXED and unit[1] in "BHF":
        return _scaled(v, ((1.0, unit),), 3)
    return _scaled(v, tuple((scale, prefix + unit) for scale, prefix in _SI), 3)


def format_number(v: object) -> str:
    """An argument's raw value as panels show it: whole numbers with thousands separators (a
    whole float too: FLOPs), other floats to six significant digits, anything else as ``str``."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, float) and not (v.is_integer() and abs(v) < 1e15):
        return f"{v:,.6g}"
    return f"{int(v):,}"
