"""Identical inputs give byte-identical captures, whatever PYTHONHASHSEED is.

Two processes with different hash seeds each make the reference capture of every built-in
workload (whole run), stream two workloads through ``accelview profile`` (spooled and
``--live``) and import real traces; every dataset and attribute of every file must match.
A deterministic capture records no wall-clock or process-dependent metadata (no ``created``,
``wall_s``, pid or working directory), so nothing is left out of the comparison but an
import's ``created``: an import is not a deterministic capture and says when it was written.

Run as a script (``python test_deterministic.py OUT [TRACES]``) it makes the captures in OUT.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import h5py
import pytest
from accelview.capture.sim import workloads
from accelview.capture.sim.runtime import api
from accelview.model.store.reader import load_capture
from test_capture_stream import _streamed, assert_same_counter_totals, assert_same_op_details, assert_same_records

SEED = "5"
WHOLE_RUN = {  # every built-in workload, small enough for the suite
    "llm": ["tokens=2"],
    "gemm": ["iters=4", "m=1024", "n=1024", "k=1024"],
    "pageable-small": ["count=50"],
    "pcie-saturate": ["nbytes=268435456", "chunks=24"],
    "launch-bound": ["count=100"],
    "strided-memory": ["count=20"],
    "sync-heavy": ["count=30"],
}
STREAMED = ("llm", "pcie-saturate")  # graphs and many op names; two streams, so two driver queues
MODES = {"spool": (), "live": ("--live",)}
IMPORTS = {"import-file.h5": "kineto/a100_alexnet.json.gz", "import-dir.h5": "kineto/a100_128rank_sampled"}
HASH_SEEDS = ("1", "2")


def _params(name: str) -> list[str]:
    return [a for p in WHOLE_RUN[name] for a in ("--param", p)]


def make_captures(out: Path, traces: Path | None) -> None:
    """Every capture the test compares, written into ``out`` (the working directory meanwhile,
    so each output path on a command line is the same in every run)."""
    from accelview.app.cli.main import main as accelview
    from accelview.capture.sim.__main__ import main as simulate

    os.chdir(out)
    runs = [(simulate, [name, "--seed", SEED, *_params(name), "-o", f"whole-{name}.h5"]) for name in WHOLE_RUN]
    runs += [(accelview, ["profile", "--workload", name, "--seed", SEED, *_params(name), *flags,
                          "-o", f"{mode}-{name}.h5"]) for name in STREAMED for mode, flags in MODES.items()]
    if traces is not None:
        runs += [(accelview, ["convert", str(traces / src), dst]) for dst, src in IMPORTS.items()]
    for run, argv in runs:
        if run(argv) != 0:
            raise SystemExit(f"{argv} failed")


def _contents(path: Path) -> dict[str, Any]:
    """Every dataset (stored type, shape, bytes) and every attribute of every object of a file."""
    out: dict[str, Any] = {}
    with h5py.File(path, "r") as f:

        def visit(name: str, obj: Any) -> None:
            out.update({f"{name}@{k}": v for k, v in obj.attrs.items()})
            if isinstance(obj, h5py.Dataset):
                data = obj[()]
                out[name] = (data.dtype.str, data.shape, data.tobytes())

        visit("", f)
        f.visititems(visit)
    return out


def _differences(a: Path, b: Path, ignore: tuple[str, ...] = ()) -> list[str]:
    """The datasets and attributes (``path@name``) two files do not share byte for byte."""
    x, y = _contents(a), _contents(b)
    return sorted(k for k in x.keys() | y.keys() if k not in ignore and (k not in x or k not in y or x[k] != y[k]))


def _expected_files(traces: Path | None) -> set[str]:
    files = {f"whole-{name}.h5" for name in WHOLE_RUN} | {f"{m}-{name}.h5" for name in STREAMED for m in MODES}
    return files | (set(IMPORTS) if traces is not None else set())


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path, Path | None]:
    """The captures of two processes, side by side, with different PYTHONHASHSEEDs."""
    from conftest import SHARED_TRACES

    traces = SHARED_TRACES if SHARED_TRACES.is_dir() else None
    dirs = [tmp_path_factory.mktemp(f"hashseed{s}") for s in HASH_SEEDS]
    procs = [subprocess.Popen([sys.executable, __file__, str(d), *([str(traces)] if traces else [])],
                              env={**os.environ, "PYTHONHASHSEED": s}, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for d, s in zip(dirs, HASH_SEEDS, strict=True)]
    for p in procs:
        output, _ = p.communicate()
        assert p.returncode == 0, output
    return dirs[0], dirs[1], traces


def test_workload_parameters_cover_every_built_in_workload() -> None:
    assert set(WHOLE_RUN) == set(workloads.NAMES)


def test_captures_are_byte_identical_whatever_the_hash_seed(runs) -> None:
    a, b, traces = runs
    names = _expected_files(traces)
    assert {p.name for p in a.glob("*.h5")} == {p.name for p in b.glob("*.h5")} == names
    for name in sorted(names):
        # an import is not a deterministic capture: it says when it was written
        assert _differences(a / name, b / name, ("@created",) if name in IMPORTS else ()) == [], name


def test_deterministic_captures_record_neither_when_nor_as_which_process(runs) -> None:
    a, _, _ = runs
    for path in sorted(a.glob("*.h5")):
        if path.name in IMPORTS:
            continue
        trace = load_capture(path)
        capture = trace.metadata["capture"]
        assert capture["deterministic"] is True
        assert "wall_s" not in capture and "@created" not in _contents(path)
        assert not {"cwd", "pid"} & set(trace.metadata.get("profile", {}))
        assert not [t for t in range(len(trace.tracks)) if "pid" in trace.track_name(t)], path.name


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("workload", STREAMED)
def test_streamed_captures_match_the_whole_run_capture_of_the_workload(runs, workload: str, mode: str) -> None:
    a, _, _ = runs
    streamed, whole = load_capture(a / f"{mode}-{workload}.h5"), load_capture(a / f"whole-{workload}.h5")
    assert_same_records(streamed, whole)
    assert_same_counter_totals(streamed, whole)
    assert_same_op_details(streamed, whole)


def _pauses(pause_s: float) -> None:
    """Launches and syncs with ``pause_s`` of real script time before every fifth call."""
    dev = api.device(0)
    for i in range(60):
        if i % 5 == 0:
            time.sleep(pause_s)
        dev.launch("gemm", m=64 + i % 4, n=512, k=512)
        if i % 10 == 9:
            dev.synchronize()


def test_a_deterministic_capture_does_not_depend_on_the_scripts_real_time(tmp_path) -> None:
    # flush_ms far below the pauses: drains on a wall-clock timer would fall between other calls
    paths = []
    for pause_s in (0.0, 0.004):
        out = tmp_path / f"pause{pause_s}"
        out.mkdir()
        _streamed(out, lambda p=pause_s: _pauses(p), flush_ms=1.0, flush_events=25)
        paths.append(out / "s.h5")
    assert _differences(*paths) == []


if __name__ == "__main__":
    make_captures(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
