"""Queries behind the timeline's navigation: search (by name, or by argument value through
``argsearch``) and the dependency chain of a slice.

Pure numpy; the app calls these and only displays their results.
"""

from __future__ import annotations

import numpy as np

from ..trace import Trace
from .argsearch import find_by_args, is_arg_key, parse_query


def matching_names(trace: Trace, text: str) -> np.ndarray:
    """String ids whose text contains ``text`` (case-insensitive)."""
    needle = text.strip().lower()
    if not needle:
        return np.empty(0, np.int32)
    strings = trace.strings.strings()
    return np.array([i for i, s in enumerate(strings) if needle in s.lower()], np.int32)


def find_slices(trace: Trace, text: str) -> np.ndarray:
    """Ids of slices matching a search, ordered by start time: ``key=value`` an argument equal
    to value (when some argument has that key), ``arg:text`` any argument value containing
    text, else the name containing ``text`` (all case-insensitive)."""
    mode, key, value = parse_query(text)
    if mode == "kv" and not is_arg_key(trace, key):
        mode, value = "name", text.strip()  # a name with "=" in it ("gemm<N=4>"), not a key
    if mode != "name":
        return find_by_args(trace, key if mode == "kv" else None, value, exact=mode == "kv")
    ids = matching_names(trace, text)
    if not len(ids):
        return np.empty(0, np.int64)
    hits = np.flatnonzero(np.isin(trace.slices.name, ids))
    order = np.argsort(trace.slices.start_ns[hits], kind="stable")
    return hits[order].astype(np.int64)


def chain_of(trace: Trace, slice_id: int, max_hops: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """The dependency chain of a slice: every slice reachable through flows (both ways) or
    sharing its correlation id, ordered by start; and the rows of the flows on the chain."""
    fl = trace.flows
    sl = trace.slices
    members = np.array([slice_id], np.int64)
    corr = int(sl.correlation[slice_id])
    if corr >= 0:
        members = np.union1d(members, np.flatnonzero(sl.correlation == corr))
    frontier = members
    for _ in range(max_hops):
        if not len(fl) or not len(frontier):
            break
        nxt = np.concatenate((fl.dst[np.isin(fl.src, frontier)], fl.src[np.isin(fl.dst, frontier)]))
        nxt = np.setdiff1d(nxt[(nxt >= 0) & (nxt < len(sl))], members)
        members = np.union1d(members, nxt)
        frontier = nxt
    flows = np.flatnonzero(np.isin(fl.src, members) & np.isin(fl.dst, members)) if len(fl) else np.empty(0, np.int64)
    order = np.lexsort((members, sl.start_ns[members]))
    return members[order].astype(np.int64), flows.astype(np.int64)


def step_in_chain(chain: np.ndarray, current: int, step: int) -> int:
    """The slice ``step`` places along ``chain`` from ``current`` (clamped to its ends)."""
    if not len(chain):
        return current
    where = np.flatnonzero(chain == current)
    i = int(where[0]) if len(where) else 0
    return int(chain[min(max(i + step, 0), len(chain) - 1)])


def frame_slice(s: float, e: float, r0: float, r1: float, min_share: float = 0.05,
                share: float = 1 / 3, min_span: float = 1.0) -> tuple[float, float] | None:
    """The window that shows a slice [s, e) at a readable width (``share`` of the view, centred)
    when the view [r0, r1) hides it or shows it narrower than ``min_share`` of itself; None when
    it is readable as it is. Next/previous search result and chain steps go through this."""
    span = r1 - r0
    inside = r0 <= s and e <= r1
    if inside and (e - s) >= min_share * span:
        return None
    new = max((e - s) / share, min_span * 20, min_span)
    if (e - s) <= 0:
        new = min(span, 2000.0)  # an instant: keep a µs-scale view around it
    mid = (s + e) / 2
    return mid - new / 2, mid + new / 2


def chain_step(chain: np.ndarray, current: int, step: int) -> tuple[int, str]:
    """Step ``step`` places along ``chain`` from ``current``: the slice to select and what to
    tell the user (its place in the chain, or that the chain ends there)."""
    if not len(chain):
        return current, "no chain"
    sid = step_in_chain(chain, current, step)
    i = int(np.flatnonzero(chain == sid)[0]) + 1 if (chain == sid).any() else 1
    n = len(chain)
    if sid == current:
        return sid, f"end of chain ({i} / {n})" if step > 0 else f"start of chain ({i} / {n})"
    return sid, f"chain {i} / {n}"
