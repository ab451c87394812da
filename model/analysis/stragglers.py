"""Stragglers: the device or host that arrives last at the collectives, by how much, how often,
and the likely cause; named from arrivals, so even when a barrier makes every participant's
phases equally long.

At each collective whose last arrival is later than the median by at least ``MIN_SPREAD_NS`` and
``MIN_SHARE`` of the phase before it (since the same participants' previous collective), the
participants later than the median by more than half of that are *late*. The culprit is who is
late at most collectives (at least a third of those): every device of one host late together
names the host (``"device": None``), else the device most often late. The cause compares what
the culprit did since its previous collective with its peers (the median; per participation,
``participation_busy`` measures it on the capture's own clock, so it travels from a fleet's hosts
as a few numbers): more time in
compute ops → ``compute``, in PCIe copies (DMA) → ``pcie``, in receiving over the network
(send/recv) → ``network``; lateness none of these explain is time the device waited for its
host to submit work → ``host``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .collectives import Collective, Participant
from .findings import Finding, severity

MIN_SPREAD_NS = 1_000.0
MIN_SHARE = 0.03  # of the phase since the same participants' previous collective
CATEGORIES = ("compute", "pcie", "network")


class _Timelines:
    """Per device, its work by category as sorted (start, end) columns."""

    def __init__(self, trace: Trace) -> None:
        self.work: dict[int, dict[str, tuple[np.ndarray, np.ndarray]]] = {}
        tracks, sl = trace.tracks, trace.slices
        kind, dev = tracks.kind[sl.track], tracks.device[sl.track]
        on_coll = (tracks.name[sl.track] == trace.strings.lookup("collective")) & (kind == int(TrackKind.EXEC_UNIT))
        p2p = np.zeros(len(sl), dtype=bool)
        for a in np.unique(sl.args[on_coll]).tolist():
            if a >= 0 and trace.args(a).get("op") in ("send", "recv"):
                p2p |= on_coll & (sl.args == a)
        cats = {"compute": (kind == int(TrackKind.EXEC_UNIT)) & ~on_coll,
                "pcie": kind == int(TrackKind.DMA_ENGINE), "network": p2p}
        for d in np.unique(dev[dev >= 0]).tolist():
            mine = dev == d
            per = {}
            for cat, mask in cats.items():
                rows = np.flatnonzero(mask & mine)
                rows = rows[np.argsort(sl.start_ns[rows], kind="stable")]
                s = sl.start_ns[rows].astype(np.float64)
                per[cat] = (s, s + sl.dur_ns[rows])
            self.work[int(d)] = per

    def busy(self, who: int, t0: float, t1: float) -> dict[str, float]:
        """Time in each category of ``who``'s work within [t0, t1)."""
        out = {}
        for cat, (s, e) in self.work.get(who, {}).items():
            lo, hi = np.searchsorted(e, t0, side="right"), np.searchsorted(s, t1, side="left")
            out[cat] = float(np.sum(np.clip(np.minimum(e[lo:hi], t1) - np.maximum(s[lo:hi], t0), 0, None)))
        return out


def participation_busy(trace: Trace, parts: dict[str, list]) -> list[list[float]]:
    """Per participation (:func:`.collectives.participations` of ``trace``): its device's time in
    each of ``CATEGORIES`` since the end of the participation before it on its lane (everything
    before, for the first), measured on ``trace``'s clock. What names a straggler's cause, small
    enough to travel from a fleet's hosts."""
    if not parts["lane"]:
        return []  # no collectives: a single device's capture need not sort its work
    timelines = _Timelines(trace)
    previous: dict[int, float] = {}
    out = []
    for lane, device, arrival, end in zip(parts["lane"], parts["device"], parts["arrival"], parts["end"], strict=True):
        busy = timelines.busy(device, previous.get(lane, arrival - 1e12), arrival)
        out.append([busy.get(cat, 0.0) for cat in CATEGORIES])
        previous[lane] = end
    return out


def straggler_finding(collectives: Sequence[Collective], begin_ns: float, span_ns: float) -> Finding | None:
    """The ``straggler`` finding of ``collectives`` (with their ``busy`` rows; ``begin_ns``: when
    the run began), or None when nobody is late."""
    late_at: list[tuple[Collective, frozenset[Participant], float]] = []
    previous: dict[tuple[Participant, ...], float] = {}  # the last end of each set of participants
    begin = float(begin_ns)
    for c in collectives:
        med = float(np.median(c.arrivals))
        spread = c.last_arrival_ns - med
        phase = med - previous.get(c.participants, begin)
        previous[c.participants] = float(np.median(c.ends))
        if spread < max(MIN_SPREAD_NS, MIN_SHARE * phase):
            continue
        late = frozenset(p for p, a in zip(c.participants, c.arrivals.tolist(), strict=True) if a - med > spread / 2)
        late_at.append((c, late, spread))
    if not late_at:
        return None
    culprit, device = _culprit(late_at)
    if culprit is None:
        return None
    hits = [(c, late, spread) for c, late, spread in late_at if _matches(late, culprit, device)]
    if len(hits) * 3 < len(late_at):
        return None
    cause, by_cause = _cause(hits, culprit, device)
    lost = sum(spread for _, _, spread in hits)
    who = f"host {culprit}" if device is None else f"device {device} of {culprit}"
    mean = lost / len(hits)
    first, last = hits[0][0], hits[-1][0]
    return Finding(
        "straggler", severity(lost, span_ns), int(first.arrivals.min()), int(last.ends.max()), int(lost),
        f"{who} arrives last at {len(hits)} of {len(collectives)} collectives, {mean / 1e3:.1f} µs after the median "
        f"participant; the others wait for it (likely cause: {cause})",
        _advice(cause, who),
        evidence={"culprit": {"host": culprit, "device": device}, "cause": cause, "late_collectives": len(hits),
                  "collectives": len(collectives), "mean_late_ns": round(mean), "excess_ns_by_cause": by_cause})


def _matches(late: frozenset[Participant], host: str, device: int | None) -> bool:
    return any(p[0] == host for p in late) if device is None else (host, device) in late


def _culprit(late_at: list[tuple[Collective, frozenset[Participant], float]]) -> tuple[str | None, int | None]:
    """(host, device) most often late; device None when a host's every participant is late together."""
    whole_hosts: Counter[str] = Counter()
    devices: Counter[Participant] = Counter()
    for c, late, _ in late_at:
        devices.update(late)
        hosts = {p[0] for p in c.participants}
        if len(hosts) > 1:
            for h in {p[0] for p in late}:
                members = {p for p in c.participants if p[0] == h}
                if len(members) > 1 and members <= late:
                    whole_hosts[h] += 1
    if not devices:
        return None, None
    (best, n), = devices.most_common(1)
    if whole_hosts:
        (host, m), = whole_hosts.most_common(1)
        if m * 2 >= n:
            return host, None
    return best[0], best[1]


def _cause(hits: list[tuple[Collective, frozenset[Participant], float]], host: str, device: int | None
           ) -> tuple[str, dict[str, int]]:
    """The likely cause: the culprit's extra time per category before it arrived, against its peers'."""
    excess = np.zeros(len(CATEGORIES))
    late_total = 0.0
    for c, _, _ in hits:
        med = float(np.median(c.arrivals))
        mine = [i for i, p in enumerate(c.participants) if p[0] == host and (device is None or p[1] == device)]
        peers = [i for i in range(len(c.participants)) if i not in mine]
        if peers and c.busy is not None and c.busy.shape[1] == len(CATEGORIES):
            excess += c.busy[mine].mean(axis=0) - np.median(c.busy[peers], axis=0)
            late_total += float(np.mean([c.arrivals[i] for i in mine])) - med
    best = int(np.argmax(excess))
    cause = CATEGORIES[best] if late_total > 0 and excess[best] > 0.5 * late_total else "host"
    return cause, {k: round(float(v)) for k, v in zip(CATEGORIES, excess, strict=True)}


def _advice(cause: str, who: str) -> str:
    return {
        "compute": f"{who} does more work per step than its peers: balance the work or find what else runs there",
        "pcie": f"{who}'s copies over PCIe take longer than its peers': check its link and what shares it",
        "network": f"{who} receives its input over the network later than its peers: check its network path",
        "host": f"{who}'s host submits its work late: look at what its host thread does before launching",
    }[cause]
