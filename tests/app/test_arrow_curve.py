"""A flow arrow's curve cut to the view is the same curve: every point of the cut piece lies on
the whole one, it reaches the view's edges, and arrows wholly outside the view are dropped."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.app.arrow_curve import arrow_curve, visible_part


def _points(c, n: int = 200) -> np.ndarray:
    t = np.linspace(0, 1, n)[:, None]
    p = np.array(c, dtype=float)
    return (1 - t) ** 3 * p[0] + 3 * (1 - t) ** 2 * t * p[1] + 3 * (1 - t) * t * t * p[2] + t ** 3 * p[3]


def _distance_to(curve, pts: np.ndarray) -> float:
    dense = _points(curve, 400_001)
    return float(max(np.min(np.hypot(*(dense - q).T)) for q in pts))


@pytest.mark.parametrize(("src", "dst"), [((-6138.0, 55.0), (865.0, 167.0)), ((300.0, 900.0), (5000.0, 60.0)),
                                          ((-9000.0, 500.0), (9000.0, 80.0))])
def test_the_cut_piece_lies_on_the_whole_curve_and_spans_the_view(src, dst) -> None:
    whole = arrow_curve(src, dst)
    part = visible_part(whole, 200.0, 1940.0)
    assert part is not None
    assert _distance_to(whole, _points(part, 40)) < 0.05  # pixels
    assert max(src[0], 200.0) - 0.05 <= part[0][0] and part[3][0] <= min(dst[0], 1940.0) + 0.05
    assert part[0][0] == pytest.approx(max(src[0], 200.0), abs=0.05)
    assert part[3][0] == pytest.approx(min(dst[0], 1940.0), abs=0.05)


def test_an_arrow_outside_the_view_is_dropped_and_a_bend_kept_whole() -> None:
    assert visible_part(arrow_curve((-6146.0, 55.0), (-6138.0, 55.0)), 200.0, 1940.0) is None
    bend = arrow_curve((500.0, 100.0), (510.0, 700.0))  # nearly vertical: bends through the lanes
    assert visible_part(bend, 200.0, 1940.0) == bend
