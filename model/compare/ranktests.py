"""Rank statistics in numpy (no scipy): Mann–Whitney U, the sign test, Benjamini–Hochberg, and a
distribution-free confidence interval for a median.

They are what Go's benchstat uses to say whether a change is beyond run-to-run noise: the U test
makes no assumption about the shape of the distributions, which for op durations are skewed and
often bimodal."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

EXACT_MAX = 400  # n_a * n_b up to which the U distribution is counted exactly (no ties)


def _ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Average ranks (1-based) of ``x`` and the sizes of its groups of ties."""
    o = np.argsort(x, kind="stable")
    xs = x[o]
    first = np.flatnonzero(np.concatenate(([True], xs[1:] != xs[:-1])))
    size = np.diff(np.concatenate((first, [len(xs)])))
    avg = first + (size + 1) / 2.0  # mean of ranks first+1 .. first+size
    ranks = np.empty(len(x))
    ranks[o] = np.repeat(avg, size)
    return ranks, size


@lru_cache(maxsize=256)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """How many of the C(n+m, n) orderings give each U = 0 .. n*m (no ties)."""
    # f[i][j] = counts for i values of one sample and j of the other, as polynomials in q.
    prev = [[1] for _ in range(m + 1)]  # i = 0: U = 0 always
    for _ in range(n):
        cur = [[1]]  # j = 0
        for j in range(1, m + 1):
            a = cur[j - 1]  # the largest value is from the second sample: U unchanged
            b = [0] * j + prev[j]  # from the first sample: it beats all j of the second
            size = max(len(a), len(b))
            cur.append([(a[k] if k < len(a) else 0) + (b[k] if k < len(b) else 0) for k in range(size)])
        prev = cur
    return tuple(prev[m])


def mann_whitney(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided p value of the Mann–Whitney U test that ``a`` and ``b`` come from one distribution.

    Exact for small samples without ties, otherwise the normal approximation with the tie and
    continuity corrections. 1.0 when either sample is empty or all values are equal."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return 1.0
    ranks, ties = _ranks(np.concatenate((a, b)))
    u = float(ranks[:n].sum() - n * (n + 1) / 2)
    if n * m <= EXACT_MAX and (ties == 1).all():
        counts = _u_counts(n, m)
        lo = min(u, n * m - u)
        tail = sum(counts[: int(lo) + 1]) / math.comb(n + m, n)
        return min(1.0, 2 * tail)
    total = n + m
    tie_term = float((ties**3 - ties).sum()) / (total * (total - 1))
    var = n * m / 12.0 * ((total + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (abs(u - n * m / 2.0) - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def sign_test(diff: np.ndarray) -> float:
    """Two-sided exact p value that paired differences are as often positive as negative (zeros
    left out): the test for ops matched one to one between two runs of a step that ran once."""
    d = np.asarray(diff)
    pos, neg = int((d > 0).sum()), int((d < 0).sum())
    n = pos + neg
    if n == 0:
        return 1.0
    k = min(pos, neg)
    if n > 1000:  # the normal approximation, with the continuity correction
        z = (n / 2 - k - 0.5) / math.sqrt(n / 4)
        return min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
    # P(X <= k) for X ~ Binomial(n, 1/2), in logs so that large n does not overflow
    logs = [math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2) for i in range(k + 1)]
    top = max(logs)
    tail = math.exp(top) * sum(math.exp(v - top) for v in logs)
    return min(1.0, 2 * tail)


def benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """p values adjusted for testing many hypotheses at once (false discovery rate): compare the
    result with the level wanted (0.05) as for a single test."""
    p = np.asarray(p, np.float64)
    n = len(p)
    if n == 0:
        return p
    o = np.argsort(p)
    scaled = p[o] * n / np.arange(1, n + 1)
    adj = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(n)
    out[o] = np.minimum(adj, 1.0)
    return out


def median_ci(x: np.ndarray, level: float = 0.95) -> tuple[float, float, float]:
    """(median, low, high): the median and a distribution-free interval from order statistics
    (the binomial method benchstat uses). Samples too small to reach ``level`` get their range."""
    x = np.sort(np.asarray(x, np.float64))
    n = len(x)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    med = float(np.median(x))
    # The largest k with P(Binomial(n, 1/2) < k) <= (1 - level) / 2: [x(k), x(n-k+1)] covers it.
    alpha = (1 - level) / 2
    cum, k = 0.0, 0
    for i in range(n // 2 + 1):
        cum += math.comb(n, i) / 2.0**n
        if cum > alpha:
            break
        k = i + 1
    if k == 0:
        return med, float(x[0]), float(x[-1])
    return med, float(x[k - 1]), float(x[n - k])
