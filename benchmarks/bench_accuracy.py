"""Accuracy of the analysis against the simulator's truth, over every built-in workload on every
device preset at several sizes and seeds: the share of device ops whose label agrees, the share
of idle time whose cause agrees, and the confusion matrices. Targets: ≥ 95% overall and ≥ 90%
for every class.

Then the same captures as a profiler without hardware counters would record them: exported to
Chrome JSON without counters (names, shapes and FLOPs kept), imported again and analysed, scored
against the same truth. Targets: op classes ≥ 90% overall and ≥ 80% per class, idle causes
≥ 95% of idle time; and whether each pathological workload's problem is the top finding, with
and without counters.

Run: .venv/bin/python benchmarks/bench_accuracy.py [--seeds 3]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from accelview.capture import sim
from accelview.capture.sim import list_presets, workloads
from accelview.model.analysis.report import analyze
from accelview.model.export.chrome import export_chrome
from accelview.model.loader import load_trace

SIZES = {
    "llm": (["tokens=2", "prompt=64", "upload=false"], ["tokens=4", "prompt=256", "batch=4", "upload=false"]),
    "gemm": (["iters=3", "m=1024", "n=1024", "k=1024"], ["iters=4", "m=4096", "n=4096", "k=4096", "dtype=fp8"]),
    "pageable-small": (["count=100", "nbytes=4096"], ["count=200"]),
    "pcie-saturate": (["nbytes=268435456", "chunks=4"], ["nbytes=1073741824", "chunks=16"]),
    "launch-bound": (["count=300"], ["count=1500", "elements=16384"]),
    "strided-memory": (["count=20"], ["count=40", "pattern=random"]),
    "sync-heavy": (["count=100"], ["count=300", "m=4096"]),
}


# Each pathological workload's problem: the finding that must rank first.
PROBLEMS = {"pageable-small": "pageable-transfer", "pcie-saturate": "pcie-saturation", "launch-bound": "launch-bound",
            "strided-memory": "low-hbm-efficiency", "sync-heavy": "host-sync"}


def _without_counters(trace, folder: Path):
    """The capture exported without counters, imported again; and each of its slice ids → the
    capture's (slices match on start, duration and name: the export keeps exact ns)."""
    path = export_chrome(trace, folder / "capture.json", counters=False)
    again = load_trace(path)
    key = {k: i for i, k in enumerate(zip(trace.slices.start_ns.tolist(), trace.slices.dur_ns.tolist(),
                                          (trace.strings[n] for n in trace.slices.name.tolist()), strict=True))}
    to_capture = [key.get(k, -1) for k in zip(again.slices.start_ns.tolist(), again.slices.dur_ns.tolist(),
                                              (again.strings[n] for n in again.slices.name.tolist()), strict=True)]
    return again, to_capture


def _score(trace, report, ops_cm: Counter, idle_cm: Counter, to_capture: list[int] | None = None) -> None:
    truth = trace.truth["truth_ops"]
    limiter = dict(zip(truth.slice.tolist(), (trace.strings[c] for c in truth.limiter), strict=True))
    for s, lab in zip(report.ops.slice.tolist(), report.ops.label.tolist(), strict=True):
        ops_cm[(limiter.get(s if to_capture is None else to_capture[s], "?"), lab)] += 1
    idle = trace.truth["truth_idle"]
    true_at = {(a, z): trace.strings[c] for a, z, c in zip(idle.start_ns.tolist(), idle.end_ns.tolist(),
                                                          idle.cause.tolist(), strict=True)}
    seen = set()
    for a, z, c in zip(report.gaps.start_ns.tolist(), report.gaps.end_ns.tolist(), report.gaps.cause.tolist(),
                       strict=True):
        seen.add((a, z))
        idle_cm[(true_at.get((a, z), "(no gap)"), c)] += z - a
    for (a, z), c in true_at.items():
        if (a, z) not in seen:
            idle_cm[(c, "(missed)")] += z - a


def _print_matrix(title: str, cm: Counter, unit: str) -> tuple[float, dict[str, float]]:
    truths = sorted({t for t, _ in cm})
    preds = sorted({p for _, p in cm})
    total = sum(cm.values())
    agree = sum(v for (t, p), v in cm.items() if t == p)
    print(f"\n{title}: {agree / total:.1%} agree ({unit}, rows: truth, columns: analysis)")
    print("  " + " " * 14 + "".join(f"{p:>14}" for p in preds) + f"{'recall':>9}")
    per_class = {}
    for t in truths:
        row = [cm.get((t, p), 0) for p in preds]
        per_class[t] = cm.get((t, t), 0) / max(sum(row), 1)
        print(f"  {t:<14}" + "".join(f"{v:>14,}" for v in row) + f"{per_class[t]:>9.1%}")
    return agree / total, per_class


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()
    ops_cm: Counter = Counter()
    idle_cm: Counter = Counter()
    bare_ops: Counter = Counter()
    bare_idle: Counter = Counter()
    top: Counter = Counter()  # (workload, "counters" | "trace alone", problem ranked first)
    runs = failed = 0
    t0 = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="bench_accuracy_"))
    for preset in list_presets():
        for name, sizes in SIZES.items():
            for params in sizes:
                for seed in range(args.seeds):
                    try:
                        with sim.session(spec=preset, seed=seed) as s:
                            workloads.run(name, params)
                        trace = s.trace()
                    except Exception as e:  # a workload that does not fit a preset is reported, not fatal
                        failed += 1
                        print(f"  skipped {name} {' '.join(params)} on {preset}: {e}")
                        continue
                    report = analyze(trace)
                    _score(trace, report, ops_cm, idle_cm)
                    again, to_capture = _without_counters(trace, folder)
                    bare = analyze(again)
                    _score(trace, bare, bare_ops, bare_idle, to_capture)
                    if name in PROBLEMS:
                        for how, r in (("counters", report), ("trace alone", bare)):
                            top[(name, how, bool(r.findings) and r.findings[0].kind == PROBLEMS[name])] += 1
                    runs += 1
    print(f"{runs} captures ({failed} skipped) in {time.perf_counter() - t0:.1f} s; "
          f"{sum(ops_cm.values()):,} ops, {sum(idle_cm.values()) / 1e6:,.1f} ms of idle time")
    ops_acc, ops_cls = _print_matrix("Op labels", ops_cm, "ops")
    idle_acc, idle_cls = _print_matrix("Idle causes", idle_cm, "ns of idle time")
    worst = min([*ops_cls.values(), *idle_cls.values()]) if ops_cls else float("nan")
    print("\n--- the same captures without hardware counters (Chrome JSON: names, shapes, FLOPs) ---")
    bops_acc, bops_cls = _print_matrix("Op classes without counters", bare_ops, "ops")
    bidle_acc, _ = _print_matrix("Idle causes without counters", bare_idle, "ns of idle time")
    print("\nTop finding is the workload's problem (captures)")
    print(f"  {'workload':<16}{'problem':<22}{'with counters':>15}{'trace alone':>13}")
    for name, problem in PROBLEMS.items():
        cells = [f"{top[(name, how, True)]}/{top[(name, how, True)] + top[(name, how, False)]}"
                 for how in ("counters", "trace alone")]
        print(f"  {name:<16}{problem:<22}{cells[0]:>15}{cells[1]:>13}")
    print(f"\nsummary: ops {ops_acc:.1%}, idle {idle_acc:.1%}, worst class {worst:.1%} "
          f"(targets ≥ 95% overall, ≥ 90% per class)")
    bworst = min(bops_cls.values()) if bops_cls else float("nan")
    print(f"without counters: ops {bops_acc:.1%}, worst class {bworst:.1%}, idle {bidle_acc:.1%} "
          f"(targets ≥ 90% overall, ≥ 80% per class, idle ≥ 95%)")


if __name__ == "__main__":
    main()
