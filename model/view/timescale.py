"""Time ↔ pixel arithmetic of the timeline and the adaptive time ruler. Pure Python, no Qt.

A ``TimeScale`` maps the visible window [r0, r1) onto ``width`` pixels. Every zoom, pan and
fit the app does goes through it, so it is tested without widgets. Its times are offsets in ns
from ``origin`` (an exact int, the trace start): absolute timestamps since the epoch (~1.7e18)
are only precise to 256 ns as floats, which is far coarser than a pixel when zoomed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from accelview.model.text.values import DURATION_UNITS

EDGE_MARGIN = 0.05  # the view may show this share of itself beyond the trace's first and last ns
MIN_SPAN_NS = 1.0  # the deepest zoom: 1 ns across the whole view (timestamps are whole ns)


@dataclass(frozen=True)
class TimeScale:
    """The visible window ``[r0, r1)`` (ns from ``origin``) drawn across ``width`` pixels, and
    the limits (``lo``, ``hi``: the trace's bounds, also from ``origin``) that pan and zoom keep
    it near. ``t0``/``t1`` give the window in absolute ns (as floats: approximate)."""

    r0: float
    r1: float
    width: int
    lo: float = 0.0
    hi: float = 1.0
    origin: int = 0

    @property
    def t0(self) -> float:
        """Start of the view in absolute ns (a float: approximate for epoch timestamps)."""
        return self.origin + self.r0

    @property
    def t1(self) -> float:
        """End of the view in absolute ns (approximate)."""
        return self.origin + self.r1

    @classmethod
    def fit(cls, lo: float, hi: float, width: int, margin: float = 0.01, origin: int = 0) -> TimeScale:
        """A scale showing all of [lo, hi] (ns from ``origin``) with a small margin."""
        span = max(float(hi - lo), MIN_SPAN_NS)
        pad = span * margin
        return cls(lo - pad, lo + span + pad, max(int(width), 1), float(lo), float(lo + span), int(origin))

    @property
    def span(self) -> float:
        """Visible duration in ns."""
        return self.r1 - self.r0

    @property
    def ns_per_px(self) -> float:
        """Nanoseconds per pixel."""
        return self.span / self.width

    def x_of(self, t: float) -> float:
        """The x pixel of time ``t`` in ns from the origin (may lie outside [0, width))."""
        return (t - self.r0) / self.ns_per_px

    def t_of(self, x: float) -> float:
        """The time (ns from the origin) at pixel ``x``."""
        return self.r0 + x * self.ns_per_px

    def with_width(self, width: int) -> TimeScale:
        """The same window on a widget of another width."""
        return replace(self, width=max(int(width), 1))

    def with_window(self, t0: float, t1: float) -> TimeScale:
        """Show [t0, t1), clamped to a sane span and to the trace's bounds plus a small margin
        (``EDGE_MARGIN`` of the view), as Perfetto does: no panning off into empty time."""
        total = max(self.hi - self.lo, MIN_SPAN_NS)
        span = min(max(float(t1 - t0), MIN_SPAN_NS), total * (1 + 2 * EDGE_MARGIN))
        m = span * EDGE_MARGIN
        r0 = float(t0) + (float(t1 - t0) - span) / 2 if t1 - t0 != span else float(t0)
        if span >= total + 2 * m:  # wider than the trace: centre it
            r0 = (self.lo + self.hi) / 2 - span / 2
        else:
            r0 = min(max(r0, self.lo - m), self.hi + m - span)
        return replace(self, r0=r0, r1=r0 + span)

    def zoom(self, factor: float, at_x: float | None = None) -> TimeScale:
        """Zoom in (factor > 1) or out (< 1) keeping the time under pixel ``at_x`` fixed
        (the centre when None)."""
        x = self.width / 2 if at_x is None else at_x
        anchor = self.t_of(x)
        span = self.span / factor
        if span < MIN_SPAN_NS:
            span = MIN_SPAN_NS
        frac = x / self.width
        t0 = anchor - frac * span
        out = self.with_window(t0, t0 + span)
        # Keep the anchor exactly under the cursor when clamping did not move the window.
        return out

    def pan_px(self, dx: float) -> TimeScale:
        """Move the view by ``dx`` pixels (positive: content moves left, later times appear)."""
        d = dx * self.ns_per_px
        return self.with_window(self.r0 + d, self.r1 + d)

    def pan_fraction(self, frac: float) -> TimeScale:
        """Move the view by a fraction of its span."""
        return self.pan_px(frac * self.width)


def unit_for(span_ns: float) -> tuple[str, float]:
    """The unit (name, ns per unit) that suits values of about ``span_ns``."""
    a = abs(span_ns)
    for scale, name in reversed(DURATION_UNITS):
        if a >= scale:
            return name, scale
    return DURATION_UNITS[0][1], DURATION_UNITS[0][0]


def format_time(ns: float, step_ns: float, unit_ns: float | None = None) -> str:
    """A ruler tick's label: a time from the trace start with the decimals that tell ticks
    ``step_ns`` apart, in one unit across the ruler (``unit_ns``'s, default the step's): ``12.35 ms``.
    Not ``format_duration``: a tick's precision is the step's, not three significant digits."""
    name, scale = unit_for(step_ns if unit_ns is None else max(abs(unit_ns), step_ns))
    step = step_ns / scale
    decimals = 0 if step >= 1 else math.ceil(-math.log10(step) - 1e-9)
    v = ns / scale
    if abs(v) < 0.5 * 10 ** (-decimals):
        v = 0.0
    return f"{v:.{decimals}f} {name}"


def tick_step(ns_per_px: float, min_px: float = 90.0) -> float:
    """The smallest 1-2-5 × 10^k ns step whose ticks are at least ``min_px`` pixels apart."""
    target = max(ns_per_px * min_px, 1.0)
    exp = math.floor(math.log10(target))
    for m in (1, 2, 5, 10):
        step = m * 10.0**exp
        if step >= target * (1 - 1e-12):
            return max(step, 1.0)
    return 10.0 ** (exp + 1)


@dataclass(frozen=True)
class Tick:
    """One ruler tick: its pixel, time and label (empty for minor ticks)."""

    x: float
    t: float
    label: str


def ruler_ticks(scale: TimeScale, origin: float = 0.0, min_px: float = 90.0, minor: int = 5) -> list[Tick]:
    """Major (labelled) and minor ticks covering the view; labels are times relative to
    ``origin`` (the trace start), in the unit that suits the step."""
    return ruler(scale, origin, min_px, minor, max_ratio=math.inf).ticks


@dataclass(frozen=True)
class Ruler:
    """A frame's ruler: its ticks and, at deep zoom, the ``base`` (ns from the scale's origin)
    the labels count from, shown once as ``base_label`` (as Perfetto's "+20 ns" ticks)."""

    ticks: list[Tick]
    base: float | None = None
    base_label: str = ""


def ruler(scale: TimeScale, origin: float = 0.0, min_px: float = 90.0, minor: int = 5,
          max_ratio: float = 1e4) -> Ruler:
    """The ruler of a view, labelled from ``origin`` (the trace start or a chosen time). When a
    label would need more than ``max_ratio`` steps' worth of digits ("65.55095 ms"), labels turn
    into offsets ("+20 ns") from a round ``base`` just before the view, itself labelled once."""
    step = tick_step(scale.ns_per_px, min_px)
    far = max(abs(scale.r0 - origin), abs(scale.r1 - origin))
    base = None
    if far / step >= max_ratio:
        coarse = 10.0 ** math.ceil(math.log10(max(scale.span, step)))
        base = origin + math.floor((scale.r0 - origin) / coarse) * coarse
    zero = origin if base is None else base
    unit = max(far, step) if base is None else max(scale.r1 - base, step)  # one unit across the ruler
    sub = step / minor
    k0 = math.floor((scale.r0 - zero) / sub)
    out: list[Tick] = []
    n = int((scale.r1 - zero) / sub - k0) + 2
    for k in range(k0, k0 + n):  # integer tick indexes: majors never missed to rounding
        rel = k * sub
        t = zero + rel
        if t > scale.r1:
            break
        label = ""
        if k % minor == 0:
            label = format_time(rel, step, unit) if base is None else "+" + format_time(rel, step, unit)
        out.append(Tick(scale.x_of(t), t, label))
    if base is None:
        return Ruler(out)
    coarse = 10.0 ** math.ceil(math.log10(max(scale.span, step)))
    return Ruler(out, base, format_time(base - origin, coarse, max(abs(base - origin), coarse)))


def held_zoom_factor(step: float, repeats: int, ramp: float = 0.25, top: float = 4.0) -> float:
    """The zoom of one key press when the key has auto-repeated ``repeats`` times: each repeat
    zooms a little more than the last, up to ``top`` plain steps at once, so holding W or S
    crosses decades in about a second (as in Perfetto) while a tap still zooms one step."""
    return float(step ** min(1.0 + ramp * max(int(repeats), 0), top))
