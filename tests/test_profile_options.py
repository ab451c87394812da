"""``accelview profile`` as a user calls it: the script's argv, cwd and exit status, the output
file, call sites, built-in workloads, bad requests (a real child process per test)."""

from __future__ import annotations

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.app.cli.profile import _trailing_options
from accelview.model.store.reader import load_capture
from profile_scripts import api_slices, write_script


def test_profile_a_script_passes_argv_cwd_and_exit_status_through(tmp_path, monkeypatch, capfd) -> None:
    script = write_script(tmp_path, "sys.exit(3)")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run.h5"
    assert main(["profile", str(script), "5", "--flag", "-o", str(out)]) == 3
    captured = capfd.readouterr()
    assert f"cwd {tmp_path} argv ['5', '--flag']" in captured.out
    assert f"accelview {out}" in captured.err.splitlines()[-1]
    trace = load_capture(out)
    assert not trace.complete and "status 3" in trace.incomplete_reason
    assert len(api_slices(trace, "launch gemm")) == 5 and trace.metadata["capture"]["exit_code"] == 3
    # host metrics of the profiled process, sampled at each drain: RSS, process and per-thread CPU
    names = {trace.track_name(int(t)) for t in np.unique(trace.counters.track)}
    assert {"process RSS", "process CPU"} <= names and any(n.startswith("thread ") for n in names)
    rss = trace.counter_series(next(int(t) for t in trace.counter_tracks.track if trace.track_name(int(t)) ==
                                    "process RSS"))[1]
    assert (rss > 10e6).all()


def test_a_script_that_raises_gives_a_capture_and_its_exit_status(tmp_path, capfd) -> None:
    script = write_script(tmp_path, "raise RuntimeError('boom')")
    out = tmp_path / "raised.h5"
    assert main(["profile", "-o", str(out), str(script), "3"]) == 1
    assert "RuntimeError: boom" in capfd.readouterr().err
    trace = load_capture(out)
    assert not trace.complete and "RuntimeError: boom" in trace.incomplete_reason
    assert len(api_slices(trace, "launch gemm")) == 3
    assert trace.self_check() == []


def test_an_existing_output_is_refused_without_force(tmp_path, capfd) -> None:
    script = write_script(tmp_path)
    out = tmp_path / "exists.h5"
    out.write_bytes(b"precious")
    assert main(["profile", str(script), "1", "-o", str(out)]) == 2
    assert "already exists (use --force" in capfd.readouterr().err
    assert out.read_bytes() == b"precious"
    assert main(["profile", str(script), "1", "-o", str(out), "--force"]) == 0
    assert load_capture(out).complete


def test_call_sites_point_at_the_scripts_lines(tmp_path) -> None:
    script = write_script(tmp_path)
    lines = script.read_text().splitlines()
    line_of = {tag: 1 + next(i for i, s in enumerate(lines) if s.endswith(f"# LINE {tag}"))
               for tag in ("copy", "launch")}
    out = tmp_path / "sites.h5"
    assert main(["profile", str(script), "2", "-o", str(out), "--call-sites"]) == 0
    trace = load_capture(out)
    for name, tag in (("launch gemm", "launch"), ("copy", "copy")):
        rows = api_slices(trace, name)
        assert len(rows) == 2
        for row in rows:
            args = trace.args(int(trace.slices.args[row]))
            assert args["site"] == f"{script}:{line_of[tag]}" and args["function"] == "step"


@pytest.mark.parametrize("flags", [[], ["--no-call-sites"], ["--call-sites", "--no-call-sites"]])
def test_call_sites_are_off_unless_asked_for(tmp_path, flags) -> None:
    """They cost about as much as the rest of the tracer: opt-in, as in Nsight Systems and the PyTorch profiler."""
    script = write_script(tmp_path)
    out = tmp_path / "nosites.h5"
    assert main(["profile", str(script), "1", "-o", str(out), *flags]) == 0
    trace = load_capture(out)
    rows = api_slices(trace, "launch gemm")
    assert len(rows) == 1
    args = trace.args(int(trace.slices.args[rows[0]]))
    assert "site" not in args and "function" not in args and args  # the call's own arguments are still there


def test_profile_a_builtin_workload(tmp_path) -> None:
    out = tmp_path / "wl.h5"
    assert main(["profile", "--workload", "sync-heavy", "--param", "count=20", "-o", str(out), "--seed", "2"]) == 0
    trace = load_capture(out)
    assert trace.complete and len(api_slices(trace, "device_synchronize")) == 20
    assert trace.metadata["capture"]["seed"] == 2


def test_bad_requests_are_one_line_errors(tmp_path, capfd) -> None:
    assert main(["profile", str(tmp_path / "missing.py"), "-o", str(tmp_path / "x.h5")]) == 2
    assert main(["profile", "--workload", "llm", "--param", "nope=1", "-o", str(tmp_path / "x.h5")]) == 2
    err = capfd.readouterr().err.splitlines()
    assert "no such file" in err[0] and "unknown parameter 'nope'" in err[1]
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize(("args", "k"), [
    (["a", "b", "-o", "x.h5"], 2), (["-o", "x.h5", "--force"], 0), (["a", "-o"], 2), (["a", "--open", "b"], 3),
    ([], 0),
])
def test_options_after_the_script_arguments_are_ours(args, k) -> None:
    assert _trailing_options(args) == k


def test_a_script_that_builds_its_own_trace_runs_and_is_captured_whole(tmp_path, capfd) -> None:
    """``s.trace()`` at the end of a session (SIMULATOR.md's pattern) works under the profiler: it
    gets what was not drained yet and no device commands (those went to the tracer's rings)."""
    script = write_script(tmp_path, """\
        t = sim.current().trace()
        print("own trace", len(t.slices), "slices")
        """)
    out = tmp_path / "own-trace.h5"
    assert main(["profile", str(script), "12", "-o", str(out)]) == 0
    assert "own trace" in capfd.readouterr().out
    trace = load_capture(out)
    assert trace.complete and len(api_slices(trace, "launch gemm")) == 12
