"""Per op family, phase and lane of one iteration group: the median time per iteration in each
run with its interval, the change, and the rank test that says whether it is beyond noise.

With at least ``MIN_REPS`` iterations in both runs the samples are the iterations (Mann–Whitney
U on the per-iteration times). A step that ran once or twice has no repetitions to measure
noise from: then an op family's or a lane's samples are its individual ops (U test on their
durations), and the phase's are its ops matched one to one (sign test on their differences)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .align import ALIGN_MAX, align
from .ranktests import mann_whitney, median_ci, sign_test
from .runs import OUTSIDE, Group, RunData

MIN_REPS = 3
MAX_SAMPLE = 2000  # ops of one family tested per run (a sample spread over the run beyond)
ORDER_MAX = ALIGN_MAX  # ops of one iteration put in launch order before aligning (longer: matched by rank)
MATCH_MAX = 200_000  # ops of one iteration matched one to one at most
KINDS = ("phase", "op", "lane", "critical-path", "finding")  # also the order of equal changes


@dataclass
class Entry:
    """One row of a diff: a thing measured in both runs (ns per iteration of its group)."""

    kind: str
    name: str
    group: str
    a_ns: float
    b_ns: float
    a_ci: tuple[float, float] | None = None
    b_ci: tuple[float, float] | None = None
    a_n: int = 1  # iterations (samples) in each run
    b_n: int = 1
    a_count: float = 0.0  # ops per iteration (op and lane entries)
    b_count: float = 0.0
    test: str = ""  # which test gave p ("" when none applies)
    p: float = 1.0
    p_adjusted: float = 1.0
    significant: bool = False
    a_slice: int = -1  # an instance in the matched iteration, for the app to select
    b_slice: int = -1
    detail: str = ""

    @property
    def change_ns(self) -> float:
        """b − a: positive when the second run took longer."""
        return self.b_ns - self.a_ns

    @property
    def change_pct(self) -> float | None:
        """The change as a percentage of a (None when a is 0)."""
        return 100.0 * self.change_ns / self.a_ns if self.a_ns else None

    @property
    def status(self) -> str:
        """new, missing, slower, faster, or ~ (no significant change)."""
        if self.a_ns == 0 and self.b_ns > 0:
            return "new"
        if self.b_ns == 0 and self.a_ns > 0:
            return "missing"
        if not self.significant:
            return "~"
        return "slower" if self.change_ns > 0 else "faster"

    def to_json(self) -> dict[str, Any]:
        """The documented ``entries`` item of ``accelview diff --json``."""

        def ci(v: tuple[float, float] | None) -> list[float] | None:
            return None if v is None else [round(v[0], 1), round(v[1], 1)]

        pct = self.change_pct
        return {"kind": self.kind, "name": self.name, "group": self.group, "a_ns": round(self.a_ns, 1),
                "b_ns": round(self.b_ns, 1), "change_ns": round(self.change_ns, 1),
                "change_pct": None if pct is None else round(pct, 2), "significant": self.significant,
                "status": self.status, "a_ci_ns": ci(self.a_ci), "b_ci_ns": ci(self.b_ci), "a_n": self.a_n,
                "b_n": self.b_n, "a_count": round(self.a_count, 2), "b_count": round(self.b_count, 2),
                "test": self.test, "p": self.p, "p_adjusted": self.p_adjusted, "detail": self.detail}


def _per_iteration(occ: np.ndarray, n_occ: int, key: np.ndarray, weights: np.ndarray | None,
                   n_keys: int, everything: bool) -> np.ndarray:
    """[occurrence, key] → summed ``weights`` (counts when None) of the slices in an occurrence
    (``everything``: all slices are in the one occurrence)."""
    if everything:
        return np.bincount(key, weights=weights, minlength=n_keys).reshape(1, n_keys).astype(np.float64)
    inside = occ >= 0
    w = None if weights is None else weights[inside]
    flat = np.bincount(occ[inside].astype(np.int64) * n_keys + key[inside], weights=w, minlength=n_occ * n_keys)
    return flat.reshape(n_occ, n_keys).astype(np.float64)


def _ci(x: np.ndarray) -> tuple[float, tuple[float, float] | None]:
    """The median, and its interval when there are repetitions to make one from."""
    med, lo, hi = median_ci(x)
    return med, ((lo, hi) if len(x) > 1 else None)


def _instances(occ: np.ndarray, key: np.ndarray, dur: np.ndarray, everything: bool) -> dict[int, np.ndarray]:
    """Durations of the individual ops of each key in any occurrence. Keys with up to MAX_SAMPLE
    ops keep them all; the ops of the others are sampled: MAX_SAMPLE per such key on average,
    at positions spread over the whole run by a multiplicative step (no pattern of the trace's to
    alias with), so each key gets a share in proportion to its ops."""
    m = np.arange(len(occ)) if everything else np.flatnonzero(occ >= 0)
    if not len(m):
        return {}
    k = key if everything else key[m]
    count = np.bincount(k)
    big = count > MAX_SAMPLE
    if big.any():
        n = len(m)
        want = min(n, MAX_SAMPLE * int(big.sum()))
        step = 2654435761 % n or 1
        while np.gcd(step, n) != 1:  # a step coprime with n visits distinct positions
            step += 1
        spread = (np.arange(want, dtype=np.int64) * step) % n
        spread = spread[big[k[spread]]]
        pick = spread if big.all() else np.concatenate((np.flatnonzero(~big[k]), spread))
        m, k = m[pick], k[pick]
    small = k.max() < 1 << 15
    o = np.argsort(k.astype(np.int16) if small else k, kind="stable")  # radix sort on small ids: O(n)
    k = k[o]
    first = np.flatnonzero(np.concatenate(([True], k[1:] != k[:-1])))
    ends = np.concatenate((first[1:], [len(k)]))
    return {int(k[a]): dur[m[o[a:b]]] for a, b in zip(first.tolist(), ends.tolist(), strict=True)}


@dataclass
class Matched:
    """The occurrence of a group each run is compared on, and its ops matched one to one."""

    a_occurrence: int
    b_occurrence: int
    a_work: np.ndarray  # slice ids of the occurrence's work, in launch order
    b_work: np.ndarray
    pairs_a: np.ndarray  # positions into a_work / b_work of the matched ops
    pairs_b: np.ndarray
    a_op: np.ndarray  # op family ids of a_work / b_work
    b_op: np.ndarray


def _in_order(run: RunData, g: Group, k: int) -> np.ndarray:
    """Positions of occurrence ``k``'s work in launch order (table order when very long)."""
    m = g.members(k)
    if len(m) > ORDER_MAX:
        return m
    start = run.trace.slices.start_ns[run.work[m]]
    if g.name == OUTSIDE:
        return m[np.argsort(start, kind="stable")]
    return m[np.lexsort((start, run.work_time[m]))]  # ops one call launched (a graph): by their start


def match_iteration(a: RunData, b: RunData, ga: Group, gb: Group) -> Matched:
    """Align the ops of the middle occurrence of a group present in both runs. An occurrence of
    more than MATCH_MAX ops (a whole run with no phases, say) is not matched op by op."""
    k = min(ga.n, gb.n) // 2
    wa, wb = _in_order(a, ga, k), _in_order(b, gb, k)
    if len(wa) > MATCH_MAX or len(wb) > MATCH_MAX:
        ia = ib = np.empty(0, np.int64)
    else:
        ia, ib = align(a.op[wa], b.op[wb])
    return Matched(k, k, a.work[wa], b.work[wb], ia, ib, a.op[wa], b.op[wb])


def _first_in(ids: np.ndarray, keys: np.ndarray) -> dict[int, int]:
    """The first slice id per key (O(n): the last write of each key wins, in reverse)."""
    if not len(keys):
        return {}
    first = np.full(int(keys.max()) + 1, -1, np.int64)
    first[keys[::-1]] = np.arange(len(keys) - 1, -1, -1)
    u = np.flatnonzero(first >= 0)
    return {int(x): int(ids[first[x]]) for x in u.tolist()}


def group_entries(a: RunData, b: RunData, name: str, ops: list[str], lanes: list[str],
                  match: Matched) -> list[Entry]:
    """Phase, op-family and lane entries of one group present in both runs (``match``: its
    iteration compared op by op)."""
    ga, gb = a.groups[name], b.groups[name]
    repeated = ga.n >= MIN_REPS and gb.n >= MIN_REPS
    out: list[Entry] = []
    if name != OUTSIDE:
        e = Entry("phase", name, name, *_medians(ga.dur_ns, gb.dur_ns), a_n=ga.n, b_n=gb.n)
        if repeated:
            e.test, e.p = "mann-whitney (iterations)", mann_whitney(ga.dur_ns, gb.dur_ns)
        elif not len(match.pairs_a):
            e.test, e.p = "none (step too long to match op by op)", 1.0
        else:
            d = a.trace.slices.dur_ns
            e.test = "sign (matched ops)"
            e.p = sign_test(b.trace.slices.dur_ns[match.b_work[match.pairs_b]] - d[match.a_work[match.pairs_a]])
        out.append(e)
    a_sl = _first_in(match.a_work, match.a_op)
    b_sl = _first_in(match.b_work, match.b_op)
    out += _keyed("op", name, ops, (ga.occ, ga.n, a.op, a.dur, ga.everything),
                  (gb.occ, gb.n, b.op, b.dur, gb.everything), repeated, a_sl, b_sl)
    out += _keyed("lane", name, lanes, (ga.lane_occ, ga.n, a.lane, a.lane_dur, ga.everything),
                  (gb.lane_occ, gb.n, b.lane, b.lane_dur, gb.everything), repeated, {}, {})
    return out


def _medians(x: np.ndarray, y: np.ndarray) -> tuple[float, float, tuple[float, float] | None,
                                                     tuple[float, float] | None]:
    ma, ca = _ci(x)
    mb, cb = _ci(y)
    return ma, mb, ca, cb


# Per slice: occurrence, then the number of occurrences, key and duration per slice, and whether
# the one occurrence holds every slice.
Sample = tuple[np.ndarray, int, np.ndarray, np.ndarray, bool]


def _keyed(kind: str, group: str, names: list[str], sa: Sample, sb: Sample, repeated: bool,
           a_slice: dict[int, int], b_slice: dict[int, int]) -> list[Entry]:
    n_keys = len(names)
    pa, pb = (_per_iteration(o, n, k, d, n_keys, every) for o, n, k, d, every in (sa, sb))
    ca, cb = (_per_iteration(o, n, k, None, n_keys, every).mean(axis=0) for o, n, k, _, every in (sa, sb))
    present = np.flatnonzero((ca > 0) | (cb > 0))
    inst_a = inst_b = None
    if not repeated:
        inst_a, inst_b = _instances(sa[0], sa[2], sa[3], sa[4]), _instances(sb[0], sb[2], sb[3], sb[4])
    out = []
    for k in present.tolist():
        e = Entry(kind, names[k], group, *_medians(pa[:, k], pb[:, k]), a_n=sa[1], b_n=sb[1],
                  a_count=float(ca[k]), b_count=float(cb[k]), a_slice=a_slice.get(k, -1), b_slice=b_slice.get(k, -1))
        if ca[k] == 0 or cb[k] == 0:
            e.test, e.p = "present in one run only", 0.0
        elif repeated:
            e.test, e.p = "mann-whitney (iterations)", mann_whitney(pa[:, k], pb[:, k])
        else:
            assert inst_a is not None and inst_b is not None
            e.test, e.p = "mann-whitney (ops)", mann_whitney(inst_a[k], inst_b[k])
        out.append(e)
    return out


def one_sided(kind: str, name: str, g: Group, run_is_b: bool) -> Entry:
    """A phase family that ran in one run only."""
    med = float(np.median(g.dur_ns)) if g.n else 0.0
    e = Entry(kind, name, name, 0.0 if run_is_b else med, med if run_is_b else 0.0,
              a_n=0 if run_is_b else g.n, b_n=g.n if run_is_b else 0, test="present in one run only", p=0.0)
    return e
