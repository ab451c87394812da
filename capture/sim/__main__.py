"""Run a built-in workload on the simulator and write its capture.

    python -m accelview.capture.sim llm --param tokens=8 --spec gen5x16-141g --seed 0 -o llm.h5

A stop-gap until ``accelview profile --workload`` exists; the capture is the same.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from . import workloads
from .device.specs import list_presets
from .runtime import api


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(prog="python -m accelview.capture.sim",
                                     description="Run a built-in workload, write its capture.")
    parser.add_argument("workload", choices=sorted(workloads.WORKLOADS))
    parser.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                        help="a workload parameter (repeatable)")
    parser.add_argument("--spec", default="gen5x16-141g",
                        help=f"device preset ({', '.join(list_presets())}) or a spec file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("-o", "--output", required=True, help="the capture file to write (.h5)")
    parser.add_argument("--force", action="store_true", help="overwrite an existing output file")
    args = parser.parse_args(argv)

    from accelview.model.errors import AccelviewError
    from accelview.model.store.writer import write_capture

    t0 = time.perf_counter()
    try:
        params = workloads.parse_params(args.workload, args.param)
        with api.session(args.spec, devices=args.devices, seed=args.seed) as s:
            workloads.run(args.workload, params)
        trace = s.trace()
        write_capture(trace, args.output, overwrite=args.force)
    except (ValueError, MemoryError, AccelviewError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    first, last = trace.time_bounds()
    print(f"{args.output}: {len(trace.slices):,} slices, {len(trace.counters):,} counter samples, "
          f"{(last - first) / 1e6:.1f} ms simulated in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
