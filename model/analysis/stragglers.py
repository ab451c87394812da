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
host to submit work → ``host``. With the culprit set aside, the same rule names whoever is still
late behind it, and so on (a fleet can have several stragglers).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..schema import TrackKind
from ..trace import Trace
from .collectives import Collective, Participant
from .findings import Finding, severity

MIN_SPREAD_NS = 1_000.0
MIN_SHARE = 0.03  # of the phase since the same participants' previous collective
CATEGORIES = ("compute", "pcie", "network")
NOISE_FACTOR = 5.0  # a straggler behind the first is late by this many robust σ of the arrivals
MAX_STRAGGLERS = 8  # findings named one behind another before the rest is left to the fleet's ranking


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


@dataclass(frozen=True)
class _Late:
    """A collective someone arrived late at: who (``late``), the latest arrival after the median
    (``spread``), the median, and the arrivals of the participants not set aside (``present``)."""

    collective: Collective
    late: frozenset[Participant]
    spread: float
    median: float
    present: dict[Participant, float]


def straggler_findings(collectives: Sequence[Collective], begin_ns: float, span_ns: float,
                       limit: int = MAX_STRAGGLERS) -> list[Finding]:
    """The ``straggler`` findings of ``collectives`` (with their ``busy`` rows; ``begin_ns``: when
    the run began), latest first: the culprit the others wait for, then, with each one named set
    aside, whoever is still late behind it (a fleet can have several), up to ``limit``."""
    named: list[tuple[str, int | None]] = []
    found: list[Finding] = []
    while len(found) < limit:
        f = _straggler(collectives, begin_ns, span_ns, named)
        if f is None:
            break
        found.append(f)
        culprit = f.evidence["culprit"]
        named.append((culprit["host"], culprit["device"]))
    return found


def _straggler(collectives: Sequence[Collective], begin_ns: float, span_ns: float,
               named: list[tuple[str, int | None]]) -> Finding | None:
    """The next straggler, the participants of those ``named`` already set aside; None when nobody
    else is late often enough."""
    late_at: list[_Late] = []
    previous: dict[tuple[Participant, ...], float] = {}  # the last end of each set of participants
    begin = float(begin_ns)
    aside_hosts = {h for h, d in named if d is None}
    aside_devices = {(h, d) for h, d in named if d is not None}
    for c in collectives:
        med = float(np.median(c.arrivals))
        phase = med - previous.get(c.participants, begin)
        previous[c.participants] = float(np.median(c.ends))
        rest = {p: a for p, a in zip(c.participants, c.arrivals.tolist(), strict=True)
                if p[0] not in aside_hosts and p not in aside_devices}
        if not rest:
            continue
        spread = max(rest.values()) - med
        if spread < max(MIN_SPREAD_NS, MIN_SHARE * phase):
            continue
        late = frozenset(p for p, a in rest.items() if a - med > spread / 2)
        late_at.append(_Late(c, late, spread, med, rest))
    if not late_at:
        return None
    culprit, device = _culprit(late_at)
    if culprit is None:
        return None
    matched = [x for x in late_at if _matches(x.late, culprit, device)]
    if len(matched) * 3 < len(late_at):
        return None
    hits = [(x.collective, x.late, x.spread) for x in matched]
    cause, by_cause = _cause(hits, culprit, device)
    # its own lateness: the latest of its participants after the median (the spread is the
    # latest of anyone's, who may be a device set aside at a whole late host)
    lost = sum(_own(x, culprit, device) for x in matched)
    who = f"host {culprit}" if device is None else f"device {device} of {culprit}"
    mean = lost / len(hits)
    if named:  # behind the first, only who stands out of the run-to-run scatter of the rest
        scatter = float(np.median([_sigma(x, culprit, device) for x in matched]))
        if mean < NOISE_FACTOR * max(scatter, MIN_SPREAD_NS):
            return None
    first, last = hits[0][0], hits[-1][0]
    if named:
        behind = ", ".join(f"host {h}" if d is None else f"device {d} of {h}" for h, d in named)
        summary = (f"{who} is late too, behind {behind}: at {len(hits)} of {len(collectives)} collectives, "
                   f"{mean / 1e3:.1f} µs after the median participant (likely cause: {cause})")
    else:
        summary = (f"{who} arrives last at {len(hits)} of {len(collectives)} collectives, {mean / 1e3:.1f} µs after "
                   f"the median participant; the others wait for it (likely cause: {cause})")
    return Finding(
        "straggler", severity(lost, span_ns), int(first.arrivals.min()), int(last.ends.max()), int(lost),
        summary, _advice(cause, who),
        evidence={"culprit": {"host": culprit, "device": device}, "cause": cause, "late_collectives": len(hits),
                  "collectives": len(collectives), "mean_late_ns": round(mean), "excess_ns_by_cause": by_cause,
                  "behind": [{"host": h, "device": d} for h, d in named]})


def _own(x: _Late, host: str, device: int | None) -> float:
    """How long after the median ``host``/``device`` (late at ``x``) arrived: its latest late
    participant's arrival (any of its others on time arrived earlier still)."""
    return max(x.present[p] for p in x.late if _matches(frozenset([p]), host, device)) - x.median


def _sigma(x: _Late, host: str, device: int | None) -> float:
    """A robust σ of the arrivals at one collective (1.4826 × their median absolute deviation from
    the median), over the participants neither set aside nor ``host``/``device``'s."""
    rest = [a for p, a in x.present.items() if not _matches(frozenset([p]), host, device)]
    return 1.4826 * float(np.median(np.abs(np.asarray(rest) - x.median))) if rest else 0.0


def _matches(late: frozenset[Participant], host: str, device: int | None) -> bool:
    return any(p[0] == host for p in late) if device is None else (host, device) in late


def _culprit(late_at: list[_Late]) -> tuple[str | None, int | None]:
    """Who the others wait for: of the participants late most often, the latest (by its mean
    lateness after the median); a host (device None) when its participants not set aside are all
    late together, or more than one of its devices is late that often, and it is as late."""
    whole_hosts: Counter[str] = Counter()
    devices: Counter[Participant] = Counter()
    for x in late_at:
        devices.update(x.late)
        if len({p[0] for p in x.collective.participants}) > 1:
            for h in {p[0] for p in x.late}:
                members = {p for p in x.present if p[0] == h}
                if len(members) > 1 and members <= x.late:
                    whole_hosts[h] += 1
    if not devices:
        return None, None
    n = max(devices.values())

    def lateness(host: str, device: int | None) -> float:
        own = [_own(x, host, device) for x in late_at if _matches(x.late, host, device)]
        return float(np.mean(own)) if own else 0.0

    often = [p for p, k in devices.items() if k * 2 >= n]
    per_host = Counter(p[0] for p in often)
    hosts = {h for h, m in whole_hosts.items() if m * 2 >= n} | {h for h, k in per_host.items() if k > 1}
    # in a fixed order (sets iterate in the string hash's order): ties go the same way every run
    candidates = sorted({(p[0], p[1]) for p, k in devices.items() if k == n} | {(h, None) for h in hosts},
                        key=lambda c: (c[0], -1 if c[1] is None else c[1]))
    # the latest; a host before one of its own devices when as late (its devices late together)
    return max(candidates, key=lambda c: (round(lateness(*c)), c[1] is None))


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
