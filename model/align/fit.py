"""Fit one clock domain against its parent clock from sync brackets: steps found, then a robust
offset-and-drift line per segment with its error bound.

1. Keep the low-delay exchanges (:func:`.brackets.low_delay`): their midpoints carry the least
   of the queueing noise.
2. Steps: the domain-minus-parent offset of the kept exchanges, less a robust drift (the
   median of slopes between exchanges a few apart, which a few steps cannot move), jumps where the clock
   stepped. A jump counts when the medians of the kept exchanges either side differ by more
   than ``STEP_SIGMAS`` times the noise (and at least ``MIN_STEP_NS``); all exchanges
   between the two kept ones then place the step to within one exchange.
3. Per segment: least squares of domain on parent time, refitted without the exchanges beyond
   four robust standard deviations. A segment spanning less than ``MIN_DRIFT_SPAN_NS`` takes
   the robust drift and fits the offset only.
4. Error bound: half the path asymmetry that the exchange cannot see (the stated bound, or the
   smallest round trip when none is stated: the domain was read somewhere inside it) plus four
   standard errors of the line at the segment's ends.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .brackets import Brackets, low_delay
from .segments import OPEN_END, OPEN_START, ClockMap, Segment


@dataclass(frozen=True)
class StepWindow:
    """Where a step was seen: between the exchanges read at parent times ``parent_ns`` and domain
    times ``domain_ns`` (before, after); ``jump_ns`` is how much domain − parent changed. Either
    clock may have stepped: a parent's step shows in every child at once (:mod:`.chain`)."""

    parent_ns: tuple[int, int]
    domain_ns: tuple[int, int]
    jump_ns: float


@dataclass(frozen=True)
class ClockFit:
    """A domain's map to its parent clock and the windows its steps were found in (one per
    boundary between segments)."""

    map: ClockMap
    steps: tuple[StepWindow, ...]

STEP_SIGMAS = 8.0
MIN_STEP_NS = 1000.0
MIN_DRIFT_SPAN_NS = 5_000_000
SIDE = 7  # kept exchanges either side of a candidate step whose medians must differ
SLOPE_RUN = 16  # kept exchanges apart for the local slopes


def _robust_sigma(x: np.ndarray) -> float:
    return float(1.4826 * np.median(np.abs(x - np.median(x)))) if len(x) else 0.0


def _robust_drift(x: np.ndarray, y: np.ndarray) -> float:
    """Median slope of y (offset) between points a few apart (0 if too few): a step spoils only
    the pairs across it."""
    m = max(1, min(SLOPE_RUN, len(x) // 4))
    dx = x[m:] - x[:-m]
    ok = dx > 0
    return float(np.median((y[m:] - y[:-m])[ok] / dx[ok])) if ok.any() else 0.0


def _steps(resid: np.ndarray, sigma: float) -> list[int]:
    """Positions i (a step between kept exchanges i−1 and i) where the level changes: a jump
    whose medians either side differ too (one stray exchange moves neither median)."""
    thr = max(STEP_SIGMAS * sigma, MIN_STEP_NS)
    out: list[int] = []
    for i in np.flatnonzero(np.abs(np.diff(resid)) > thr) + 1:
        last = out[-1] if out else 0
        before, after = resid[max(last, i - SIDE):i], resid[i:i + SIDE]
        if min(len(before), len(after)) <= SIDE // 2:  # too few either side (the data's end): a stray is a median
            continue
        if abs(np.median(after) - np.median(before)) > thr:
            out.append(int(i))
    return out


def _line(x: np.ndarray, y: np.ndarray, fixed_slope: float | None) -> tuple[float, float, float, float, float]:
    """Robust fit y = a + b·(x − x0); returns (a, b, x0, residual sigma, Sxx)."""
    keep = np.ones(len(x), bool)
    for _ in range(3):
        xs, ys = x[keep], y[keep]
        x0 = float(xs.mean())
        dx = xs - x0
        sxx = float((dx * dx).sum())
        b = fixed_slope if fixed_slope is not None or sxx == 0 else float((dx * (ys - ys.mean())).sum() / sxx)
        a = float((ys - b * dx).mean())
        res = y - a - b * (x - x0)
        s = _robust_sigma(res[keep])
        new = np.abs(res) <= max(4 * s, 1e-9)
        if new.sum() < 2 or (new == keep).all():
            break
        keep = new
    sigma = float(np.sqrt(np.mean(res[keep] ** 2))) if keep.any() else 0.0
    return a, b, x0, sigma, sxx if fixed_slope is None else np.inf


def fit_clock(b: Brackets, asymmetry_ns: float | None = None, window: int = 64, keep: float = 0.1,
              extra_error_ns: float = 0.0) -> ClockFit:
    """A domain's alignment to its parent clock from brackets in the order they were taken (not
    sorted by time: after a backward step of either clock, time order and taking order differ;
    see the module docstring).
    ``extra_error_ns`` adds what the brackets cannot show (the domain's tick, say)."""
    if len(b) < 2:
        raise ValueError("fitting a clock needs at least two sync exchanges")
    idx = low_delay(b, window, keep)
    x_all = b.mid
    y_all = b.domain_ns.astype(np.float64) - x_all  # offset seen by each exchange (domain − parent)
    x, y = x_all[idx], y_all[idx]
    drift = _robust_drift(x, y)
    resid = y - drift * (x - x[0])
    sigma = _robust_sigma(np.diff(resid)) / np.sqrt(2)
    cuts = _steps(resid, sigma)
    # Place each step among all exchanges between the two kept ones either side of it.
    bounds_all = [0]
    for i in cuts:
        lo, hi = idx[i - 1], idx[i]
        r = y_all[lo:hi + 1] - drift * (x_all[lo:hi + 1] - x[0])
        before, after = np.median(resid[max(0, i - SIDE):i]), np.median(resid[i:i + SIDE])
        closer_after = np.abs(r - after) < np.abs(r - before)
        bounds_all.append(lo + int(np.argmax(closer_after)) if closer_after.any() else hi)
    bounds_all.append(len(b))
    bounds_all = sorted(set(bounds_all))  # two cuts placed on one exchange are one step
    pieces = []
    for s0, s1 in itertools.pairwise(bounds_all):
        sel = idx[(idx >= s0) & (idx < s1)]
        if not len(sel):
            sel = np.arange(s0, s1)
        xs, ts = x_all[sel], b.domain_ns[sel].astype(np.float64)
        span = float(xs.max() - xs.min())
        a, slope, x0, sig, sxx = _line(xs, ts - xs, drift if span < MIN_DRIFT_SPAN_NS or len(sel) < 3 else None)
        ends = np.array([x_all[s0], x_all[s1 - 1]]) - x0
        se = sig * np.sqrt(1.0 / len(sel) + ends**2 / sxx).max()
        asym = float(b.rtt[sel].min()) if asymmetry_ns is None else float(asymmetry_ns)
        scale = 1.0 + slope
        # domain = (a − slope·x0) + (1 + slope)·parent  ⇒  offset = a − slope·x0
        pieces.append((a - slope * x0, scale, asym / 2 + 4 * se + extra_error_ns, s0, s1))
    starts, ends = [OPEN_START] * len(pieces), [OPEN_END] * len(pieces)
    windows = []
    for k in range(len(pieces) - 1):
        off, scale, _, _, s1 = pieces[k]
        n_off, n_scale, _, n0, _ = pieces[k + 1]
        # The step came between two exchanges; call it halfway, in parent time.
        half = (x_all[s1 - 1] + x_all[n0]) / 2
        e_here, s_next = off + scale * half, n_off + n_scale * half
        if s_next >= e_here:  # forward: no reading falls in between; split the gap
            ends[k] = starts[k + 1] = int(np.floor((e_here + s_next) / 2))
        else:  # backward: both ranges hold the times in between; the next reaches back across the gap
            ends[k] = int(np.ceil(e_here))
            starts[k + 1] = int(np.floor(n_off + n_scale * x_all[s1 - 1]))
        windows.append(StepWindow((int(b.parent_send_ns[s1 - 1]), int(b.parent_recv_ns[n0])),
                                  (int(b.domain_ns[s1 - 1]), int(b.domain_ns[n0])), float(s_next - e_here)))
    segs = tuple(Segment(starts[k], ends[k], float(off), (scale - 1.0) * 1e6, float(err))
                 for k, (off, scale, err, _, _) in enumerate(pieces))
    return ClockFit(ClockMap(segs), tuple(windows))
