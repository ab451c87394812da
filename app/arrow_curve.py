"""The curve of a flow arrow, cut to the part that can be seen.

A flow whose source lies thousands of pixels outside the view (a launch long before the window
shown) would otherwise be stroked, antialiased, along its whole length before the clip threw
most of it away: about 0.3 ms an arrow. The cut piece is the same curve (de Casteljau
subdivision), so what is drawn in the view does not change.
"""

from __future__ import annotations

Point = tuple[float, float]
Cubic = tuple[Point, Point, Point, Point]


def arrow_curve(src: Point, dst: Point) -> Cubic:
    """The cubic from ``src`` to ``dst``: an S when the destination is well to the right, else a
    bend through the lanes (nearly vertical), not sideways."""
    dx = max(abs(dst[0] - src[0]) * 0.5, 12.0)
    if dst[0] - src[0] < 24:
        down = 1 if dst[1] > src[1] else -1
        return src, (src[0], src[1] + down * 10), (dst[0] - 14, dst[1]), dst
    return src, (src[0] + dx, src[1]), (dst[0] - dx, dst[1]), dst


def _lerp(a: Point, b: Point, t: float) -> Point:
    return a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t


def _split(c: Cubic, t: float) -> tuple[Cubic, Cubic]:
    """The curve's pieces before and after parameter ``t``."""
    ab, bc, cd = _lerp(c[0], c[1], t), _lerp(c[1], c[2], t), _lerp(c[2], c[3], t)
    abc, bcd = _lerp(ab, bc, t), _lerp(bc, cd, t)
    mid = _lerp(abc, bcd, t)
    return (c[0], ab, abc, mid), (mid, bcd, cd, c[3])


def _x(c: Cubic, t: float) -> float:
    u = 1 - t
    return u * u * u * c[0][0] + 3 * u * u * t * c[1][0] + 3 * u * t * t * c[2][0] + t * t * t * c[3][0]


def _t_at(c: Cubic, x: float) -> float:
    """The parameter where a curve whose x grows with t reaches ``x``."""
    lo, hi = 0.0, 1.0
    for _ in range(30):  # well under a pixel for any curve on a screen
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if _x(c, mid) < x else (lo, mid)
    return (lo + hi) / 2


def visible_part(c: Cubic, x0: float, x1: float) -> Cubic | None:
    """The piece of ``c`` between x = ``x0`` and ``x1`` (None when none of it is): cut only where
    x grows along the curve (the S), else the whole curve when it touches the range."""
    xs = [p[0] for p in c]
    if max(xs) < x0 or min(xs) > x1:
        return None
    if not xs[0] <= xs[1] <= xs[2] <= xs[3]:
        return c
    if xs[3] > x1:
        c = _split(c, _t_at(c, x1))[0]
    if c[0][0] < x0:
        c = _split(c, _t_at(c, x0))[1]
    return c
