"""Host metrics of a profiled script (issue 22, defect 4): the process's RSS and CPU are sampled
through the run, every few ms of its host time, not once per drain; deterministic captures keep none."""

from __future__ import annotations

import numpy as np
from accelview.app.cli.main import main
from accelview.model import TrackKind
from accelview.model.store.reader import load_capture
from profile_scripts import write_script


def _series(trace, name: str) -> np.ndarray:
    track = next(int(t) for t in trace.counter_tracks.track if trace.track_name(int(t)) == name)
    return trace.counter_series(track)[0]


def test_process_rss_and_cpu_are_sampled_through_the_run(tmp_path, capfd) -> None:
    script = write_script(tmp_path)
    out = tmp_path / "run.h5"
    assert main(["profile", str(script), "1600", "-o", str(out)]) == 0
    capfd.readouterr()
    trace = load_capture(out)
    api = trace.tracks.kind[trace.slices.track] == TrackKind.RUNTIME_API
    t0, t1 = int(trace.slices.start_ns[api].min()), int((trace.slices.start_ns + trace.slices.dur_ns)[api].max())
    span = t1 - t0
    assert span > 80e6  # the script's host time: modelled copies and kernels, not this machine's speed
    for name in ("process RSS", "process CPU"):
        ts = _series(trace, name)
        assert len(ts) >= 20, (name, len(ts))
        assert ts[0] < t0 + span / 5 and ts[-1] > t1 - span / 5, name  # from the start to the end
        assert np.diff(ts).max() < span / 5, name  # and no long stretch without a sample


def test_a_deterministic_capture_records_no_host_metrics(tmp_path, capfd) -> None:
    script = write_script(tmp_path)
    out = tmp_path / "det.h5"
    assert main(["profile", str(script), "20", "--deterministic", "-o", str(out)]) == 0
    capfd.readouterr()
    trace = load_capture(out)
    names = {trace.track_name(int(t)) for t in trace.counter_tracks.track}
    assert not {"process RSS", "process CPU"} & names
