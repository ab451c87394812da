"""Several PyTorch profiler traces chosen or dropped together open as one run's ranks."""

from __future__ import annotations

from accelview.app.cluster_open import cluster_loader, is_cluster_choice
from kineto_traces import TRACES, needs_traces


@needs_traces
def test_a_runs_rank_files_open_as_one_multi_rank_trace() -> None:
    files = [str(TRACES / "a100_128rank_sampled" / f"rank-{r}.json.gz") for r in (0, 1)]
    assert is_cluster_choice(files)
    seen: list[float] = []
    trace = cluster_loader(files)("label", seen.append)
    assert [r["rank"] for r in trace.metadata["ranks"]] == [0, 1]
    assert seen and seen[-1] == 1.0
