"""A request's lifecycle: for a device op or copy, the stages from the host API call through the
driver, the queue, the doorbell, DMA or execution, to the host waking up, each with its latency;
and each stage's latency distribution across a run.

Stages (ns; a stage a request did not go through is absent):
- ``api``: the runtime call's own time until it handed the command to the driver (without a
  driver lane, as in PyTorch traces: the launching call, start to end);
- ``driver``: the submission (ring write and doorbell write);
- ``queue``: waiting behind earlier work of its stream or unit after it was submitted;
- ``doorbell``: from when it could go (submitted, and what it waited for done) to its start on
  the device: the device seeing the doorbell and launching it;
- ``dma`` (a copy) or ``execution`` (an op): the work itself;
- ``wake``: from the end of the work a blocked host call waited for to the call's return.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dag import API, DMA, OP, SUBMIT, GraphContext

STAGES = ("api", "driver", "queue", "doorbell", "dma", "execution", "wake")


@dataclass(frozen=True)
class Stage:
    """One stage of one request, in the trace's time base."""

    name: str
    start_ns: int
    end_ns: int

    @property
    def latency_ns(self) -> int:
        """The stage's length."""
        return self.end_ns - self.start_ns


@dataclass(frozen=True)
class StageStats:
    """One stage's latency distribution over a run's requests."""

    stage: str
    count: int
    total_ns: float
    mean_ns: float
    p50_ns: float
    p95_ns: float
    p99_ns: float
    max_ns: float


def _bounds(ctx: GraphContext, work: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(start, end) of every stage of each request (NaN where it has none), vectorised."""
    start, end = ctx.start.astype(np.float64), ctx.end.astype(np.float64)
    deps = ctx.deps
    root, parent = ctx.roles.chain
    nan = np.full(len(work), np.nan)
    sub = parent[work]
    is_sub = (sub >= 0) & (ctx.kind[np.maximum(sub, 0)] == SUBMIT)
    is_call = (sub >= 0) & (ctx.kind[np.maximum(sub, 0)] == API)  # launched by a call, no driver lane (Kineto)
    api = np.where(is_call, sub, root[work])
    sub = np.where(is_sub, sub, -1)
    # The hand-off to the device: the submission, else the launching call's end.
    handoff = np.where(is_sub, sub, np.where(is_call, api, -1))
    has_sub = handoff >= 0
    has_api = (api >= 0) & has_sub
    s_sub = np.where(is_sub, start[np.maximum(sub, 0)], np.nan)
    e_sub = np.where(has_sub, end[np.maximum(handoff, 0)], np.nan)
    s_api = np.where(has_api, start[np.maximum(api, 0)], np.nan)
    e_api = np.where(is_sub, s_sub, np.where(is_call, e_sub, np.nan))
    # Ready: the end of the work before it on its stream and on its unit.
    ready = np.full(len(work), -np.inf)
    sp = deps.stream_pred[work]
    ready = np.where(sp >= 0, np.maximum(ready, end[np.maximum(sp, 0)]), ready)
    prev = deps.has_prev[work]
    ready = np.where(prev, np.maximum(ready, end[np.maximum(work - 1, 0)]), ready)
    s = start[work]
    go = np.minimum(np.maximum(e_sub, ready), s)  # submitted and free to run (NaN without a submission)
    q_end = np.minimum(np.maximum(ready, e_sub), s)
    is_op = ctx.kind[work] == OP
    out = {
        "api": (s_api, np.where(has_api, e_api, np.nan)),
        "driver": (s_sub, np.where(is_sub, e_sub, np.nan)),
        "queue": (np.where(has_sub, e_sub, np.nan), np.where(has_sub, q_end, np.nan)),
        "doorbell": (go, np.where(has_sub, s, np.nan)),
        "dma": (np.where(~is_op, s, nan), np.where(~is_op, end[work], nan)),
        "execution": (np.where(is_op, s, nan), np.where(is_op, end[work], nan)),
    }
    # Wake: the calls that blocked on this work.
    calls, waited = ctx.woken
    wake_s, wake_e = nan.copy(), nan.copy()
    at = np.full(len(ctx.kind), -1, np.int64)
    at[work] = np.arange(len(work))
    ok = waited >= 0
    i = at[waited[ok]]
    keep = i >= 0
    wake_s[i[keep]] = end[waited[ok][keep]]
    wake_e[i[keep]] = end[calls[ok][keep]]
    out["wake"] = (wake_s, wake_e)
    return out


def requests(ctx: GraphContext) -> np.ndarray:
    """The run's requests: every device op and every copy (its DMA job)."""
    return np.flatnonzero((ctx.kind == OP) | (ctx.kind == DMA))


def request_of(ctx: GraphContext, slice_id: int) -> int:
    """The request a slice belongs to: the slice itself if it is an op or copy, else the first
    op or copy its flows lead to (a call or submission); -1 when none."""
    if ctx.kind[slice_id] in (OP, DMA):
        return slice_id
    fl = ctx.trace.flows
    frontier = np.array([slice_id])
    for _ in range(4):
        nxt = fl.dst[np.isin(fl.src, frontier)]
        work = nxt[np.isin(ctx.kind[nxt], (OP, DMA))]
        if len(work):
            return int(work[np.argmin(ctx.start[work])])
        if not len(nxt):
            break
        frontier = nxt
    return -1


def lifecycle(ctx: GraphContext, slice_id: int) -> list[Stage]:
    """The stages of the request ``slice_id`` belongs to, in order (empty when it is none)."""
    req = request_of(ctx, slice_id)
    if req < 0:
        return []
    b = _bounds(ctx, np.array([req]))
    out = []
    for name in STAGES:
        s, e = b[name][0][0], b[name][1][0]
        if not (np.isnan(s) or np.isnan(e)):
            out.append(Stage(name, int(s), int(max(e, s))))
    return out


def stage_distributions(ctx: GraphContext) -> list[StageStats]:
    """Each stage's latency distribution over all requests of the run (stages no request went
    through are left out)."""
    b = _bounds(ctx, requests(ctx))
    out = []
    for name in STAGES:
        lat = b[name][1] - b[name][0]
        lat = np.maximum(lat[~np.isnan(lat)], 0)
        if len(lat):
            p50, p95, p99 = np.percentile(lat, (50, 95, 99))
            out.append(StageStats(name, len(lat), float(lat.sum()), float(lat.mean()), float(p50), float(p95),
                                  float(p99), float(lat.max())))
    return out
