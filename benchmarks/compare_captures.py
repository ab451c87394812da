"""Reference captures, and whether two sets of them are the same table by table.

    .venv/bin/python benchmarks/compare_captures.py make OUT_DIR     # this checkout's captures
    .venv/bin/python benchmarks/compare_captures.py compare A_DIR B_DIR

``make`` writes the whole-run capture of every built-in workload (``python -m
accelview.capture.sim``) and two streamed through the capture service (``accelview profile``),
all with seed 5. ``compare`` reports each file as identical bytes, canonically identical (string
ids and argument-set ids resolved to what they name; pid, cwd, wall time and output path left
out) or different, with the first differing rows. Run ``make`` from two checkouts (before and
after a change) to show that a refactoring left the captures alone. Exit status 1 when any differs.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import h5py
import numpy as np
from accelview.capture.sim.workloads import NAMES
from accelview.model.schema import STRING_COLUMNS
from accelview.model.store.reader import load_capture

SMALL = {"llm": ["--param", "tokens=4"]}  # keeps the llm capture small
STREAMED = (("llm", ["--param", "tokens=4"]), ("sync-heavy", []))
TABLES = ("tracks", "slices", "flows", "counter_tracks", "counters", "instants", "clocks", "clock_samples",
          "op_counters", "clock_segments")


def make(out: Path) -> None:
    """Write the reference captures of this checkout into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    for w in NAMES:
        subprocess.run([py, "-m", "accelview.capture.sim", w, *SMALL.get(w, []), "--seed", "5", "-o",
                        str(out / f"whole-{w}.h5"), "--force"], check=True, capture_output=True)
    for w, params in STREAMED:
        subprocess.run([py, "-m", "accelview.app.cli", "profile", "--workload", w, *params, "--seed", "5", "-o",
                        str(out / f"stream-{w}.h5"), "--force"], check=True, capture_output=True)
    print(f"{len(NAMES) + len(STREAMED)} captures in {out}")


def _datasets(path: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    with h5py.File(path, "r") as f:
        f.visititems(lambda name, obj: out.__setitem__(name, np.asarray(obj[()]).tobytes())
                     if isinstance(obj, h5py.Dataset) else None)
    return out


def _canonical(path: Path) -> dict[str, dict[str, list[Any]]]:
    """Every table as lists, string ids and argument sets resolved to what they name."""
    t = load_capture(path)
    s = t.strings

    def text(i: int) -> str | None:
        return re.sub(r" \(pid \d+\)", "", s[int(i)]) if int(i) >= 0 else None  # a pid is one run's

    args = t.tables["args"]
    sets: dict[int, list[tuple[str | None, Any]]] = {}
    for row in range(len(args)):
        kind = int(args["kind"][row])
        v = int(args["int"][row]) if kind == 0 else float(args["real"][row]) if kind == 1 else text(args["str"][row])
        sets.setdefault(int(args["set"][row]), []).append((text(args["key"][row]), v))
    resolved = {k: tuple(sorted(v, key=repr)) for k, v in sets.items()}
    tables: dict[str, dict[str, list[Any]]] = {}
    for name, tab in [*((n, t.tables[n]) for n in TABLES), *((f"truth/{n}", tab) for n, tab in t.truth.items())]:
        cols: dict[str, list[Any]] = {}
        for c in tab.schema.names:
            a = tab[c]
            if c in STRING_COLUMNS and c != "str":
                cols[c] = [text(i) for i in a]
            elif c == "args":
                cols[c] = [resolved.get(int(i)) for i in a]
            else:
                cols[c] = np.asarray(a).tolist()
        tables[name] = cols
    meta = dict(t.metadata)
    meta.get("profile", {}).pop("pid", None)
    meta.get("profile", {}).pop("cwd", None)
    meta.get("capture", {}).pop("wall_s", None)
    text_meta = re.sub(r"'output': '[^']*'", "'output': X", repr(sorted(meta.items())))
    tables["metadata"] = {"m": [text_meta]}
    return tables


def compare(a: Path, b: Path) -> bool:
    """Print how each capture of ``a`` compares with its namesake in ``b``; True when none differs."""
    same = True
    for fa in sorted(a.glob("*.h5")):
        fb = b / fa.name
        if not fb.exists():
            print(f"{fa.name}: missing in {b}")
            same = False
            continue
        ra, rb = _datasets(fa), _datasets(fb)
        raw = sorted(k for k in set(ra) | set(rb) if ra.get(k) != rb.get(k))
        ca, cb = _canonical(fa), _canonical(fb)
        diffs = []
        for table in sorted(set(ca) | set(cb)):
            ta, tb = ca.get(table, {}), cb.get(table, {})
            for col in sorted(set(ta) | set(tb)):
                x, y = ta.get(col) or [], tb.get(col) or []
                if x != y:
                    i = next((i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
                    diffs.append(f"{table}.{col}: {len(x)} vs {len(y)} rows, first difference at row {i}")
        state = "identical bytes" if not raw else "canonically identical" if not diffs else "DIFFERENT"
        print(f"{fa.name}: {state}" + (f" (raw bytes differ in {', '.join(raw)})" if raw else ""))
        for d in diffs[:12]:
            print(f"    {d}")
        same = same and not diffs
    return same


def main() -> int:
    """Command-line entry point; returns the exit status."""
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        make(Path(sys.argv[2]))
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "compare":
        return 0 if compare(Path(sys.argv[2]), Path(sys.argv[3])) else 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
