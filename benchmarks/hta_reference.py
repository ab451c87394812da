"""Recompute the Holistic Trace Analysis figures that tests/model/test_gpu_analysis.py holds.

HTA is not a dependency of accelview (it is heavy: pandas, ~10 s per trace), so this runs in
a Python that has it, e.g. ``python -m venv /tmp/hta && /tmp/hta/bin/pip install
holistictraceanalysis "pandas<3"``, then:

    /tmp/hta/bin/python benchmarks/hta_reference.py [TRACE ...]

It prints, per trace (names relative to ../shared/traces/kineto), HTA's temporal breakdown
(span, idle, compute, non-compute in µs), idle time by cause per stream and the
communication/compute overlap, in the form of the test's HTA_* tables.
"""

from __future__ import annotations

import logging
import sys
import tempfile
from pathlib import Path

TRACES = Path(__file__).resolve().parents[2] / "shared" / "traces" / "kineto"
DEFAULT = ["a100_alexnet.json.gz", "a100_2rank_nccl_rank0.json.gz", "mtia_1rank_inference_accelerator.json.gz",
           "v100_1rank_ns_resolution.json.gz"]


def main() -> None:
    logging.disable(logging.WARNING)
    from hta.trace_analysis import TraceAnalysis  # only in the HTA venv

    for name in sys.argv[1:] or DEFAULT:
        with tempfile.TemporaryDirectory() as d:
            (Path(d) / Path(name).name).symlink_to(TRACES / name)
            ta = TraceAnalysis(trace_dir=d)
            t = ta.get_temporal_breakdown(visualize=False).iloc[0]
            idle, _ = ta.get_idle_time_breakdown(visualize=False)
            overlap = ta.get_comm_comp_overlap(visualize=False)
        print(f"{name!r}: ({int(t['kernel_time(us)'])}, {int(t['idle_time(us)'])}, {int(t['compute_time(us)'])}, "
              f"{int(t['non_compute_time(us)'])}),  # temporal: span, idle, compute, non-compute")
        streams: dict[int, dict[str, float]] = {}
        for row in idle.itertuples():
            streams.setdefault(int(row.stream), {})[row.idle_category] = row.idle_time
        for stream, cats in streams.items():
            print(f"    stream {stream}: ({cats.get('host_wait', 0):.0f}, {cats.get('kernel_wait', 0):.0f}, "
                  f"{cats.get('other', 0):.0f}),  # idle: host wait, kernel wait, other")
        print(f"    overlap: {overlap.iloc[0].to_dict()}")


if __name__ == "__main__":
    main()
