"""Class of every device op a trace has no hardware counters for, from what the trace alone
carries, with a confidence and the evidence used (strongest first):

- ``roofline``: FLOPs (a ``flops`` argument, as PyTorch's ``with_flops`` records) and bytes (a
  ``bytes`` argument, or the op's shape arguments through ``bytes_from_shape``) against the
  device's peaks (its spec in the metadata, else a preset matched on the device's name in
  ``deviceProperties``): the nearer roof names compute or memory; an op far from both is
  latency-bound (XProf's op profile, Nsight Compute's speed of light);
- ``kind``: copies (with their direction), memsets, collectives and device-side waits, by name;
- ``launch``: a kernel launched with too few blocks to fill the device is latency-bound;
- ``name``: the op family's usual limiter (GEMM, convolution, attention: compute; elementwise,
  reduction, normalisation, gather: memory), short ops latency-bound (``duration``).

The vocabulary, the byte estimates, the thresholds and the device presets are data
(``resources/op_classes.json``). ``unknown`` is left only where nothing allows a guess.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from importlib.resources import files
from typing import TYPE_CHECKING, Any

import numpy as np

from .metrics.counters import arg_columns, arg_strings
from .metrics.expr import ExprError, Node, evaluate, parse
from .metrics.expr import names as names_of
from .metrics.taxonomy import MetricRegistry, device_constants
from .metrics.units import Unit
from .roles import Roles

if TYPE_CHECKING:
    from ..trace import Trace

CLASSES = ("compute", "memory", "latency", "transfer", "communication", "wait", "unknown")
EVIDENCE = ("counters", "roofline", "kind", "launch", "name", "duration", "none")
NOT_KERNEL = frozenset({"transfer", "communication", "wait"})  # classes the op's kind decides outright


@dataclass(frozen=True)
class Family:
    """One entry of the op vocabulary."""

    name: str
    cls: str
    confidence: float
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class Vocabulary:
    """``resources/op_classes.json``, checked and compiled."""

    families: tuple[Family, ...]
    bytes_from_shape: dict[str, Node]
    flops_from_dims: dict[str, Node]
    dtype_bytes: dict[str, float]
    sol_below: float
    small_work_ns: float
    blocks_per_sm_below: float
    short_ns: int
    devices: tuple[dict[str, Any], ...]

    def family_of(self, text: str) -> Family | None:
        """The first family whose pattern matches ``text``."""
        return next((f for f in self.families if f.pattern.search(text)), None)


@cache
def vocabulary() -> Vocabulary:
    """The shipped vocabulary (loaded once)."""
    data = json.loads((files("accelview.resources") / "op_classes.json").read_text())
    fams = tuple(Family(f["family"], f["class"], float(f["confidence"]), re.compile(f["pattern"], re.IGNORECASE))
                 for f in data["families"])
    bad = [f.name for f in fams if f.cls not in CLASSES]
    if bad:
        raise ExprError(f"op_classes.json: families with an unknown class: {bad}")
    shapes = {k: parse(v) for k, v in data["bytes_from_shape"].items() if k != "about"}
    dims = {k: parse(v) for k, v in data["flops_from_dims"].items() if k != "about"}
    lat = data["latency"]
    return Vocabulary(fams, shapes, dims, {k: float(v) for k, v in data["dtype_bytes"].items()},
                      float(lat["sol_below"]), float(lat["small_work_ns"]), float(lat["blocks_per_sm_below"]),
                      int(lat["short_ns"]), tuple(data["devices"]))


@dataclass(frozen=True)
class Peaks:
    """Per op: the device's peak FLOP/s for the op's dtype and its HBM bytes/s (NaN: unknown)."""

    flops: np.ndarray
    hbm: np.ndarray


def peaks(roles: Roles, ops: np.ndarray, registry: MetricRegistry | None = None) -> Peaks:
    """The peaks each op is measured against: the device spec of the capture's metadata (the
    dtype's matrix peak), else a preset matched on the device's name (``deviceProperties``)."""
    from .ops import device_spec  # ops imports this module

    t = roles.trace
    registry = registry or MetricRegistry.load()
    n = len(ops)
    peak_f, peak_m = np.full(n, np.nan), np.full(n, np.nan)
    devices = t.tracks.device[t.slices.track[ops]]
    dtype = arg_strings(t, "dtype", ops)
    for d in np.unique(devices).tolist():
        m = devices == d
        c = device_constants(registry, device_spec(t.metadata, int(d), t.source))
        if "peak_flops_bf16" in c and "hbm_peak" in c:
            peak_f[m], peak_m[m] = c["peak_flops_bf16"], c["hbm_peak"]
            for dt in ("fp8", "fp32"):  # ops of another dtype are measured against that dtype's peak
                sid = t.strings.lookup(dt)
                if sid >= 0 and f"peak_flops_{dt}" in c:
                    peak_f[m & (dtype == sid)] = c[f"peak_flops_{dt}"]
            continue
        preset = _preset(t.metadata, int(d))
        if preset is not None:
            pf = preset["peak_flops"]
            peak_f[m], peak_m[m] = pf.get("bf16", max(pf.values())), preset["hbm_bytes_per_s"]
            for dt, v in pf.items():
                sid = t.strings.lookup(dt)
                if sid >= 0:
                    peak_f[m & (dtype == sid)] = v
    return Peaks(peak_f, peak_m)


def _preset(metadata: Mapping[str, Any], device: int) -> dict[str, Any] | None:
    """The vocabulary's device preset whose name the device's ``deviceProperties`` entry holds."""
    props = metadata.get("deviceProperties")
    if not isinstance(props, list):
        return None
    name = next((str(p.get("name", "")) for p in props if isinstance(p, Mapping) and p.get("id") == device), None)
    if name is None and props and isinstance(props[0], Mapping):
        name = str(props[0].get("name", ""))  # one device listed for all
    return next((p for p in vocabulary().devices if name and p["match"] in name), None)


def shape_bytes(roles: Roles, ops: np.ndarray) -> np.ndarray:
    """Bytes each op moves at least, from a ``bytes`` argument or its shape arguments (NaN where
    the trace allows no estimate)."""
    t = roles.trace
    voc = vocabulary()
    out = arg_columns(t, ["bytes"], ops)["bytes"]
    kind = arg_strings(t, "op", ops)
    dtype = arg_strings(t, "dtype", ops)
    size = np.full(len(ops), 2.0)  # bf16 unless the op says
    for sid in np.unique(dtype[dtype >= 0]).tolist():
        size[dtype == sid] = voc.dtype_bytes.get(t.strings[sid], 2.0)
    for sid in np.unique(kind[kind >= 0]).tolist():
        tree = voc.bytes_from_shape.get(t.strings[sid])
        m = np.flatnonzero((kind == sid) & np.isnan(out))
        if tree is None or not len(m):
            continue
        cols = arg_columns(t, sorted(names_of(tree)), ops[m])
        elems = evaluate(tree, lambda k, c=cols: (np.nan_to_num(c[k]) if k in c else 0.0, Unit()))[0]
        out[m] = np.asarray(elems, float) * size[m]
    return out


LAUNCHER_LEVELS = 4  # how far up from the launching call to look for the op that recorded FLOPs and shapes


def enclosing(trace: Trace, ids: np.ndarray) -> np.ndarray:
    """Per slice: the slice one level up on its track that encloses it (-1 at the top)."""
    sl, runs = trace.slices, trace.runs
    out = np.full(len(ids), -1, np.int64)
    where = {(int(t), int(d)): (int(b), int(e)) for t, d, b, e in zip(runs.track, runs.depth, runs.begin, runs.end,
                                                                       strict=True)}
    ok = (ids >= 0) & (sl.depth[np.maximum(ids, 0)] > 0)
    track, depth = sl.track[np.maximum(ids, 0)], sl.depth[np.maximum(ids, 0)]
    keys = np.unique(np.stack((track[ok], depth[ok])), axis=1).T if ok.any() else []
    for t, d in keys:
        run = where.get((int(t), int(d) - 1))
        if run is None:
            continue
        b, e = run
        m = np.flatnonzero(ok & (track == t) & (depth == d))
        s = sl.start_ns[ids[m]]
        k = b + np.searchsorted(sl.start_ns[b:e], s, "right") - 1
        inside = (k >= b) & (sl.start_ns[np.maximum(k, b)] + sl.dur_ns[np.maximum(k, b)]
                             >= s + sl.dur_ns[ids[m]])
        out[m[inside]] = k[inside]
    return out


def launcher_args(roles: Roles, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """FLOPs and bytes that the host side recorded for each op: on the runtime call that launched
    it or the ops enclosing that call (PyTorch's ``with_flops`` and ``record_shapes`` on
    ``aten::mm``), the nearest first; NaN where none did."""
    t = roles.trace
    flops, nbytes = np.full(len(ops), np.nan), np.full(len(ops), np.nan)
    if t.strings.lookup("flops") < 0 and t.strings.lookup("Input Dims") < 0:
        return flops, nbytes
    root, _ = roles.chain
    cur = root[ops]
    for _ in range(LAUNCHER_LEVELS):
        ok = cur >= 0
        if not ok.any():
            break
        f = arg_columns(t, ["flops"], np.maximum(cur, 0))["flops"]
        take = ok & np.isnan(flops) & ~np.isnan(f)
        flops[take] = f[take]
        b, f = host_shapes(t, np.maximum(cur, 0))
        take = ok & np.isnan(nbytes) & ~np.isnan(b)
        nbytes[take] = b[take]
        take = ok & np.isnan(flops) & ~np.isnan(f)
        flops[take] = f[take]
        cur = enclosing(t, cur)
    return flops, nbytes


def host_shapes(trace: Trace, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bytes of the tensors a host op recorded (``Input Dims`` and ``Input type``, as PyTorch's
    ``record_shapes`` writes them) and, for the ops ``flops_from_dims`` knows (``aten::mm`` ...),
    their FLOPs; NaN where the op recorded none."""
    dims, types = arg_strings(trace, "Input Dims", ids), arg_strings(trace, "Input type", ids)
    nbytes, flops = np.full(len(ids), np.nan), np.full(len(ids), np.nan)
    voc = vocabulary()
    names = trace.slices.name[ids]
    rows = np.stack((dims, types, names)).T
    has = dims >= 0
    for dm, ty, nm in (np.unique(rows[has], axis=0).tolist() if has.any() else []):
        try:
            shapes, kinds = json.loads(trace.strings[dm]), json.loads(trace.strings[ty]) if ty >= 0 else []
        except ValueError:
            continue
        tensors = [x for x in shapes if isinstance(x, list)] if isinstance(shapes, list) else []
        total = 0.0
        for i, shape in enumerate(tensors):
            if shape and all(isinstance(x, int) for x in shape):
                kind = kinds[i] if isinstance(kinds, list) and i < len(kinds) else "float"
                total += float(np.prod(shape)) * voc.dtype_bytes.get(str(kind), 4.0)
        m = (dims == dm) & (types == ty) & (names == nm)
        if total > 0:
            nbytes[m] = total
        tree = voc.flops_from_dims.get(trace.strings[nm])
        if tree is not None:
            known = {f"{'abc'[i]}{j}": float(x) for i, shape in enumerate(tensors[:3]) for j, x in enumerate(shape)
                     if isinstance(x, int)}
            if names_of(tree) <= set(known):
                flops[m] = float(evaluate(tree, lambda k, known=known: (known[k], Unit()))[0])
    return nbytes, flops


@dataclass(frozen=True)
class OpLabels:
    """Labels of device ops, column-wise (``slice`` holds slice ids). Classes and evidence are
    kept as small codes (indexes into ``CLASSES`` and ``EVIDENCE``): at millions of ops their
    string forms (``label``, ``evidence``) cost hundreds of MB, so they are made only when asked."""

    slice: np.ndarray
    code: np.ndarray  # int8 index in CLASSES: compute, memory, latency ... "unknown" (no counters, no spec)
    confidence: np.ndarray
    compute_sol: np.ndarray  # achieved / peak FLOP/s (0..1)
    memory_sol: np.ndarray  # achieved / peak HBM bandwidth (0..1)
    evidence_code: np.ndarray  # int8 index in EVIDENCE: "counters", or what decided without them
    family_code: np.ndarray  # int16 index of the op family its name matched in the vocabulary (len(families): none)

    @cached_property
    def label(self) -> np.ndarray:
        """Each op's class as a string (``CLASSES``)."""
        return np.array(CLASSES, "<U13")[self.code]

    @cached_property
    def evidence(self) -> np.ndarray:
        """What decided each op's class, as a string (``EVIDENCE``)."""
        return np.array(EVIDENCE, "<U8")[self.evidence_code]

    @cached_property
    def family(self) -> np.ndarray:
        """Each op's family name ("" when none), as objects."""
        return np.array([*(f.name for f in vocabulary().families), ""], object)[self.family_code]

    def is_class(self, *names: str) -> np.ndarray:
        """Mask of the ops whose class is one of ``names``."""
        return np.isin(self.code, [CLASSES.index(n) for n in names])

    def unknown_share(self, dur_ns: np.ndarray) -> float:
        """Share of these ops' time (``dur_ns`` of the slices) left ``unknown``."""
        d = dur_ns[self.slice].astype(float)
        return float(d[self.code == CLASSES.index("unknown")].sum() / d.sum()) if d.sum() > 0 else 0.0


def classify_without_counters(roles: Roles, ops: np.ndarray, registry: MetricRegistry | None = None) -> OpLabels:
    """Class ``ops`` (slice ids of device ops without counters) from the trace alone. Works on
    class and evidence codes (indexes into CLASSES and EVIDENCE), strings only at the end."""
    t = roles.trace
    voc = vocabulary()
    c_of, e_of = {c: i for i, c in enumerate(CLASSES)}, {e: i for i, e in enumerate(EVIDENCE)}
    dur = np.maximum(t.slices.dur_ns[ops], 1).astype(float)
    # Kind and name: one regex pass per distinct string among the names and "op" arguments; the
    # first family (in the vocabulary's order) that either matches names the op.
    names, op_arg = t.slices.name[ops], arg_strings(t, "op", ops)
    none = len(voc.families)
    present = np.zeros(len(t.strings) + 1, bool)
    present[names] = True
    present[op_arg[op_arg >= 0]] = True
    table = np.full(len(t.strings) + 1, none, np.int16)  # the last entry: no "op" argument
    for sid in np.flatnonzero(present[:-1]).tolist():
        f = voc.family_of(t.strings[sid])
        table[sid] = none if f is None else voc.families.index(f)
    fam = np.minimum(table[names], table[op_arg])  # op_arg -1 reads the last entry
    fams = [*voc.families, None]
    u_cls = np.array([c_of[f.cls] if f else c_of["unknown"] for f in fams], np.int8)
    u_conf = np.array([f.confidence if f else 0.0 for f in fams])
    u_kind = np.array([bool(f) and (f.cls in NOT_KERNEL or f.name in ("copy-d2d", "memset")) for f in fams], bool)
    label, conf, kind_decides = u_cls[fam], u_conf[fam], u_kind[fam]
    named = label != c_of["unknown"]
    evidence = np.where(kind_decides, e_of["kind"], np.where(named, e_of["name"], e_of["none"])).astype(np.int8)
    kernel = ~kind_decides
    # Short kernels did too little work to reach either roof.
    short = kernel & (dur < voc.short_ns)
    label[short], evidence[short] = c_of["latency"], e_of["duration"]
    conf[short] = np.where(named[short], 0.55, 0.45)
    # Launch parameters: too few blocks to fill the device.
    bps = arg_columns(t, ["blocks per SM"], ops)["blocks per SM"]
    few = kernel & (bps < voc.blocks_per_sm_below)
    label[few], conf[few], evidence[few] = c_of["latency"], 0.65, e_of["launch"]
    # Roofline: FLOPs and bytes against the peaks.
    p = peaks(roles, ops, registry)
    flops = arg_columns(t, ["flops"], ops)["flops"]
    nbytes = shape_bytes(roles, ops)
    if np.isnan(flops).any() or np.isnan(nbytes).any():  # what the launching host op recorded
        lf, lb = launcher_args(roles, ops)
        flops, nbytes = np.where(np.isnan(flops), lf, flops), np.where(np.isnan(nbytes), lb, nbytes)
    flops, nbytes = np.nan_to_num(flops), np.nan_to_num(nbytes)
    with np.errstate(invalid="ignore"):
        csol = np.nan_to_num(flops / p.flops * 1e9 / dur)
        msol = np.nan_to_num(nbytes / p.hbm * 1e9 / dur)
    # The roofline decides where both figures are known, or the one known reaches its roof.
    roof = kernel & ~np.isnan(p.flops) & (((flops > 0) & (nbytes > 0)) | (csol >= voc.sol_below)
                                          | (msol >= voc.sol_below))
    if roof.any():
        sol = np.maximum(csol, msol)
        lat = roof & (sol < voc.sol_below) & (sol * dur < voc.small_work_ns)
        label[roof] = np.where(csol >= msol, c_of["compute"], c_of["memory"])[roof]
        both = (flops > 0) & (nbytes > 0)
        conf[roof] = np.clip(np.where(both, 0.6, 0.5) + 0.3 * np.minimum(sol, 1.0), 0.5, 0.9)[roof]
        label[lat] = c_of["latency"]
        conf[lat] = np.clip(0.9 - sol / voc.sol_below * 0.3, 0.5, 0.9)[lat]
        evidence[roof] = e_of["roofline"]
    return OpLabels(ops, label, conf, csol, msol, evidence, fam)
