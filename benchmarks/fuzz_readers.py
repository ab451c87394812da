"""Fuzz every reader longer than CI does, and print examples tried and failures found per reader.

The properties of tests/test_fuzz_readers.py (the strategies and the oracle live in
tests/fuzz_readers.py): random traces round-trip through save/load (HDF5) and through Chrome
export/import unchanged; random corruptions (bit flips, truncations, splices, hostile tokens,
field mutations) of real captures and traces end in a clean one-line error or a correct load,
each in a forked child bounded to 1 GiB more memory and 60 s. Here failures are recorded, not
raised, so the run goes on exploring; each distinct failure is printed once with its first line.

Run: .venv/bin/python benchmarks/fuzz_readers.py [--examples 500] [--seed N]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from accelview.model.export.chrome import export_chrome
from accelview.model.importers import import_trace
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from fuzz_readers import run_isolated, seeds, traces, write_corruption
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from trace_compare import assert_same

READERS = ("hdf5", "chrome", "kineto", "export")


def _settings(examples: int) -> settings:
    return settings(max_examples=examples, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))


def round_trips(examples: int, folder: Path, rng_seed: int) -> dict[str, tuple[int, Counter]]:
    """Random traces through save/load and export/import: (examples, failures by first line)."""
    return {name: _round_trip(through, examples, folder, rng_seed)
            for name, through in (("hdf5 save/load", _save_load), ("chrome export/import", _export_import))}


def _round_trip(through, examples: int, folder: Path, rng_seed: int) -> tuple[int, Counter]:
    tried, failures = 0, Counter()

    @seed(rng_seed)
    @_settings(examples)
    @given(trace=traces())
    def prop(trace):
        nonlocal tried
        tried += 1
        try:
            through(trace, folder)
        except Exception as e:  # a finding: recorded, and the run goes on
            failures[f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"] += 1

    prop()
    return tried, failures


def _save_load(trace, folder: Path) -> None:
    path = folder / "rt.h5"
    write_capture(trace, path, overwrite=True)
    back = load_capture(path)
    assert_same(trace, back)
    assert back.metadata == trace.metadata, "metadata differs"


def _export_import(trace, folder: Path) -> None:
    back = import_trace(export_chrome(trace, folder / "rt.json"))
    assert_same(trace, back)
    assert {k: v for k, v in back.metadata.items() if k != "import_stats"} == trace.metadata, "metadata differs"


def corruptions(reader: str, inputs: list[Path], examples: int, folder: Path,
                rng_seed: int) -> tuple[int, Counter, Counter]:
    """Corrupted inputs of one reader: (inputs checked, answers, failures by first line)."""
    answers, failures = Counter(), Counter()

    @seed(rng_seed)
    @_settings(examples)
    @given(data=st.data())
    def prop(data):
        path = write_corruption(data.draw, reader, data.draw(st.sampled_from(inputs)), folder)
        answer = run_isolated(path)
        kind = answer if answer in ("error", "load") else answer.split(":")[0]
        answers[kind] += 1
        if kind not in ("error", "load"):
            last = [line for line in answer.strip().splitlines() if line.strip()][-1]
            failures[f"{kind}: {last[:160]}"] += 1

    prop()
    return sum(answers.values()), answers, failures


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=500, help="examples per reader and per round trip")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: a new one, printed)")
    args = ap.parse_args()
    rng_seed = args.seed if args.seed is not None else random.randrange(2**32)
    print(f"fuzz_readers: {args.examples} examples per property, seed {rng_seed}")
    total_failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        for name, (tried, failures) in round_trips(args.examples, folder, rng_seed).items():
            print(f"  round trip {name:<22} {tried:>6} examples  {sum(failures.values()):>4} failures")
            for text, n in failures.most_common():
                print(f"      {n:>4} x {text}")
            total_failures += sum(failures.values())
        (folder / "seeds").mkdir()
        inputs = seeds(folder / "seeds")
        for reader in READERS:
            tried, answers, failures = corruptions(reader, inputs[reader], args.examples, folder, rng_seed)
            print(f"  corrupted {reader:<23} {tried:>6} examples  {sum(failures.values()):>4} failures  "
                  f"({answers['error']} clean errors, {answers['load']} loads)")
            for text, n in failures.most_common():
                print(f"      {n:>4} x {text}")
            total_failures += sum(failures.values())
        print(f"  {total_failures} failures in {time.perf_counter() - start:.0f} s")
    sys.exit(1 if total_failures else 0)


if __name__ == "__main__":
    main()
