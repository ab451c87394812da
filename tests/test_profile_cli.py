"""``accelview profile``: a real child process per test (each about half a second)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.app.cli.profile import _trailing_options
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import BEHIND_BYTES, CaptureService, Progress
from accelview.model import TrackKind
from accelview.model.store.reader import load_capture

SCRIPT = """\
import os, sys
from accelview.capture import sim

def step(dev, w, h):
    dev.copy(w, h)                                  # LINE copy
    dev.launch("gemm", m=64, n=1024, k=1024)        # LINE launch

dev = sim.device(0)
w = dev.alloc((1024, 1024), "bf16")
h = sim.host_buffer((1024, 1024), "bf16")
for i in range(int(sys.argv[1])):
    step(dev, w, h)
dev.synchronize()
print("cwd", os.getcwd(), "argv", sys.argv[1:])
{tail}
"""


def _script(tmp_path: Path, tail: str = "", name: str = "work.py") -> Path:
    path = tmp_path / name
    path.write_text(SCRIPT.format(tail=textwrap.dedent(tail)))
    return path


def _api_slices(trace, name: str) -> np.ndarray:
    kind = trace.tracks.kind[trace.slices.track]
    names = np.array([trace.strings[int(n)] for n in trace.slices.name])
    return np.flatnonzero((kind == TrackKind.RUNTIME_API) & (names == name))


def test_profile_a_script_passes_argv_cwd_and_exit_status_through(tmp_path, monkeypatch, capfd) -> None:
    script = _script(tmp_path, "sys.exit(3)")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run.h5"
    assert main(["profile", str(script), "5", "--flag", "-o", str(out)]) == 3
    captured = capfd.readouterr()
    assert f"cwd {tmp_path} argv ['5', '--flag']" in captured.out
    assert f"accelview {out}" in captured.err.splitlines()[-1]
    trace = load_capture(out)
    assert not trace.complete and "status 3" in trace.incomplete_reason
    assert len(_api_slices(trace, "launch gemm")) == 5 and trace.metadata["capture"]["exit_code"] == 3
    # host metrics of the profiled process, sampled at each drain: RSS, process and per-thread CPU
    names = {trace.track_name(int(t)) for t in np.unique(trace.counters.track)}
    assert {"process RSS", "process CPU"} <= names and any(n.startswith("thread ") for n in names)
    rss = trace.counter_series(next(int(t) for t in trace.counter_tracks.track if trace.track_name(int(t)) ==
                                    "process RSS"))[1]
    assert (rss > 10e6).all()


def test_a_script_that_raises_gives_a_capture_and_its_exit_status(tmp_path, capfd) -> None:
    script = _script(tmp_path, "raise RuntimeError('boom')")
    out = tmp_path / "raised.h5"
    assert main(["profile", "-o", str(out), str(script), "3"]) == 1
    assert "RuntimeError: boom" in capfd.readouterr().err
    trace = load_capture(out)
    assert not trace.complete and "RuntimeError: boom" in trace.incomplete_reason
    assert len(_api_slices(trace, "launch gemm")) == 3
    assert trace.self_check() == []


@pytest.mark.parametrize("live", [False, True], ids=["spooled", "live"])
def test_a_child_killed_with_sigkill_leaves_a_readable_incomplete_capture(tmp_path, live) -> None:
    script = _script(tmp_path, """\
        for i in range(400):
            dev.launch("elementwise", elements=4096)
        os.kill(os.getpid(), 9)
        """)
    out = tmp_path / "killed.h5"
    result = CaptureService(CaptureConfig(output=str(out), flush_events=100, live=live), [str(script), "10"]).run()
    assert result.exit_code == 128 + 9 and not result.complete
    trace = load_capture(out)
    assert not trace.complete and "SIGKILL" in trace.incomplete_reason
    launches = len(_api_slices(trace, "launch elementwise"))
    assert 300 <= launches < 400  # everything up to the last drain before the kill
    assert len(_api_slices(trace, "launch gemm")) == 10 and trace.self_check() == []


def test_a_forked_child_of_the_script_is_not_traced_and_cannot_end_the_capture(tmp_path) -> None:
    """A forked process inherits the tracer and the pipe: it must not write frames into the
    parent's stream (they would interleave), nor end the capture when it exits."""
    script = _script(tmp_path, """\
        pid = os.fork()
        if pid == 0:  # the child makes calls enough to drain several times, then exits normally
            for _ in range(60):
                dev.launch("elementwise", elements=4096)
            dev.synchronize()
            sys.exit(0)
        os.waitpid(pid, 0)
        for _ in range(25):
            dev.launch("gemm", m=64, n=64, k=64)
        dev.synchronize()
        sys.exit(3)
        """)
    out = tmp_path / "forked.h5"
    result = CaptureService(CaptureConfig(output=str(out), flush_events=10), [str(script), "2"]).run()
    assert result.exit_code == 3 and "status 3" in result.reason  # the parent's, not the fork's 0
    trace = load_capture(out)
    assert "status 3" in trace.incomplete_reason and trace.self_check() == []
    assert len(_api_slices(trace, "launch gemm")) == 2 + 25  # every call of the traced process, in one stream
    assert len(_api_slices(trace, "launch elementwise")) == 0  # the forked child's: not traced


def test_the_capture_ends_with_the_script_not_with_a_fork_it_left_running(tmp_path) -> None:
    script = _script(tmp_path, """\
        import time
        pid = os.fork()
        if pid == 0:  # outlives the script: until the test says so, at most 30 s
            for _ in range(300):
                if os.path.exists(sys.argv[2]):
                    break
                time.sleep(0.1)
            open(sys.argv[2] + ".ended", "w").close()
            os._exit(0)
        """)
    out, done = tmp_path / "lingering.h5", tmp_path / "done"
    try:
        result = CaptureService(CaptureConfig(output=str(out)), [str(script), "1", str(done)]).run()
        assert not (tmp_path / "done.ended").exists()  # the fork still runs
    finally:
        done.touch()
    assert result.complete and load_capture(out).complete


def test_a_fork_stopped_by_sigterm_dies_of_it_as_it_would_untraced(tmp_path) -> None:
    """multiprocessing's Pool.terminate() sends its fork workers SIGTERM: the child's own handler
    (stop the script, keep the capture) is not theirs."""
    script = _script(tmp_path, """\
        import signal, time
        pid = os.fork()
        if pid == 0:
            time.sleep(30)
            os._exit(0)
        time.sleep(0.2)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        sys.exit(0 if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM else 5)
        """)
    out = tmp_path / "terminated.h5"
    result = CaptureService(CaptureConfig(output=str(out)), [str(script), "1"]).run()
    assert result.exit_code == 0 and result.complete


def test_an_existing_output_is_refused_without_force(tmp_path, capfd) -> None:
    script = _script(tmp_path)
    out = tmp_path / "exists.h5"
    out.write_bytes(b"precious")
    assert main(["profile", str(script), "1", "-o", str(out)]) == 2
    assert "already exists (use --force" in capfd.readouterr().err
    assert out.read_bytes() == b"precious"
    assert main(["profile", str(script), "1", "-o", str(out), "--force"]) == 0
    assert load_capture(out).complete


def test_call_sites_point_at_the_scripts_lines(tmp_path) -> None:
    script = _script(tmp_path)
    lines = script.read_text().splitlines()
    line_of = {tag: 1 + next(i for i, s in enumerate(lines) if s.endswith(f"# LINE {tag}"))
               for tag in ("copy", "launch")}
    out = tmp_path / "sites.h5"
    assert main(["profile", str(script), "2", "-o", str(out), "--call-sites"]) == 0
    trace = load_capture(out)
    for name, tag in (("launch gemm", "launch"), ("copy", "copy")):
        rows = _api_slices(trace, name)
        assert len(rows) == 2
        for row in rows:
            args = trace.args(int(trace.slices.args[row]))
            assert args["site"] == f"{script}:{line_of[tag]}" and args["function"] == "step"


@pytest.mark.parametrize("flags", [[], ["--no-call-sites"], ["--call-sites", "--no-call-sites"]])
def test_call_sites_are_off_unless_asked_for(tmp_path, flags) -> None:
    """They cost about as much as the rest of the tracer: opt-in, as in Nsight Systems and the PyTorch profiler."""
    script = _script(tmp_path)
    out = tmp_path / "nosites.h5"
    assert main(["profile", str(script), "1", "-o", str(out), *flags]) == 0
    trace = load_capture(out)
    rows = _api_slices(trace, "launch gemm")
    assert len(rows) == 1
    args = trace.args(int(trace.slices.args[rows[0]]))
    assert "site" not in args and "function" not in args and args  # the call's own arguments are still there


def test_profile_a_builtin_workload(tmp_path) -> None:
    out = tmp_path / "wl.h5"
    assert main(["profile", "--workload", "sync-heavy", "--param", "count=20", "-o", str(out), "--seed", "2"]) == 0
    trace = load_capture(out)
    assert trace.complete and len(_api_slices(trace, "device_synchronize")) == 20
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


def test_the_service_is_not_left_with_the_pipe_open(tmp_path) -> None:
    import gc

    gc.collect()  # captures loaded by earlier tests close their files when collected: not during this one
    before = len(os.listdir("/proc/self/fd"))
    CaptureService(CaptureConfig(output=str(tmp_path / "fd.h5")), [str(_script(tmp_path)), "1"]).run()
    assert len(os.listdir("/proc/self/fd")) == before


def test_the_profile_command_stopped_by_sigterm_closes_the_capture(tmp_path) -> None:
    """A kill of ``accelview profile`` itself (or a closed terminal's SIGHUP) is a cancel: the
    script stops, and what it sent is converted and closed, not left in the spool."""
    import signal
    import subprocess
    import sys
    import time

    script = _script(tmp_path, """\
        while True:
            dev.launch("elementwise", elements=4096)
        """)
    out = tmp_path / "killed-service.h5"
    proc = subprocess.Popen([sys.executable, "-m", "accelview.app.cli", "profile", str(script), "1", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    spool = tmp_path / ".killed-service.h5.spool"
    deadline = time.monotonic() + 30
    while (not spool.exists() or spool.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.05)  # the script has sent a few drains
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM  # the script's status: it was stopped
    assert "incomplete: cancelled" in err and "Traceback" not in err
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == "cancelled" and trace.self_check() == []
    assert len(_api_slices(trace, "launch elementwise")) > 1000 and not spool.exists()


def test_a_killed_profile_command_leaves_a_spool_that_convert_turns_into_the_capture(tmp_path, capfd) -> None:
    """SIGKILL gives the service no chance to convert: the file it started says where the
    records are and how to convert them, and ``accelview convert`` does it."""
    import subprocess
    import sys
    import time

    script = _script(tmp_path, """\
        while True:
            dev.launch("elementwise", elements=4096)
        """)
    out = tmp_path / "lost-service.h5"
    spool = tmp_path / ".lost-service.h5.spool"
    proc = subprocess.Popen([sys.executable, "-m", "accelview.app.cli", "profile", str(script), "1", "-o", str(out)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while (not spool.exists() or spool.stat().st_size < 200_000) and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    left = load_capture(out)  # what the killed service had started
    assert not left.complete and left.incomplete_reason.endswith(f"accelview convert {spool} {out} --force")
    capfd.readouterr()
    assert main(["profile", str(script), "1", "-o", str(out), "--live"]) == 2  # a new run would lose the spool
    assert f"{spool} holds the records of a profile run that was killed" in capfd.readouterr().err
    assert main(["convert", str(spool), str(out)]) == 2  # the started file is there: --force, as the hint says
    assert main(["convert", str(spool), str(out), "--force"]) == 0
    assert "incomplete: recovered from the spool" in capfd.readouterr().out
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason.startswith("recovered from the spool of a capture service")
    assert len(_api_slices(trace, "launch elementwise")) > 1000 and trace.self_check() == []
    assert not spool.exists()
    bad = tmp_path / ".other.h5.spool"
    bad.write_bytes(b"not a stream of frames")
    assert main(["convert", str(bad), str(tmp_path / "other.h5")]) == 2
    err = capfd.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bad) in err and "is not a capture service's spool" in err


def test_a_service_that_fails_while_converting_keeps_the_spool(tmp_path, monkeypatch, capfd) -> None:
    out = tmp_path / "failed.h5"
    spool = tmp_path / ".failed.h5.spool"

    def fail(*_args) -> None:
        raise RuntimeError("a bug in the conversion")

    with monkeypatch.context() as m:
        m.setattr(CaptureService, "_convert", fail)
        with pytest.raises(RuntimeError):
            CaptureService(CaptureConfig(output=str(out)), [str(_script(tmp_path)), "30"]).run()
    assert spool.stat().st_size > 0  # what the script sent is not lost with the service's bug
    trace = load_capture(out)
    assert trace.incomplete_reason == (f"the capture service stopped (RuntimeError); what the script sent is in "
                                       f"{spool}: accelview convert {spool} {out} --force")
    assert main(["convert", str(spool), str(out), "--force"]) == 0
    assert len(_api_slices(load_capture(out), "launch gemm")) == 30 and not spool.exists()


def test_a_script_that_builds_its_own_trace_runs_and_is_captured_whole(tmp_path, capfd) -> None:
    """``s.trace()`` at the end of a session (SIMULATOR.md's pattern) works under the profiler: it
    gets what was not drained yet and no device commands (those went to the tracer's rings)."""
    script = _script(tmp_path, """\
        t = sim.current().trace()
        print("own trace", len(t.slices), "slices")
        """)
    out = tmp_path / "own-trace.h5"
    assert main(["profile", str(script), "12", "-o", str(out)]) == 0
    assert "own trace" in capfd.readouterr().out
    trace = load_capture(out)
    assert trace.complete and len(_api_slices(trace, "launch gemm")) == 12


def test_a_time_limit_stops_the_script_and_keeps_the_capture(tmp_path) -> None:
    script = _script(tmp_path, """\
        while True:
            dev.launch("elementwise", elements=4096)
        """)
    out = tmp_path / "limited.h5"
    result = CaptureService(CaptureConfig(output=str(out), max_seconds=1.0), [str(script), "1"]).run()
    assert result.exit_code == 128 + 15 and result.reason == "time limit reached (1 s)"
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == "time limit reached (1 s)"
    assert len(_api_slices(trace, "launch elementwise")) > 0 and trace.self_check() == []


def test_converting_after_the_script_gives_the_capture_converting_live_gives(tmp_path) -> None:
    script = _script(tmp_path)
    traces, events, seen = [], [], []
    for live in (False, True):
        out = tmp_path / f"live={live}.h5"
        result = CaptureService(CaptureConfig(output=str(out), deterministic=True, flush_events=16, live=live),
                                [str(script), "40"], on_progress=lambda p: seen.append(p.phase)).run()
        assert result.complete
        traces.append(load_capture(out))
        events.append(result.progress.events)
    assert events[0] == events[1] == traces[0].metadata["capture"]["events"] > 200
    assert sorted(p.name for p in tmp_path.iterdir()) == ["live=False.h5", "live=True.h5", "work.py"]  # no spool left
    spooled, live = traces
    for name, table in live.tables.items():
        for column in table.schema.names:
            assert np.array_equal(spooled.tables[name][column], table[column]), f"{name}.{column}"
    assert len(spooled.slices) > 200 and len(spooled.flows) >= 200 and spooled.self_check() == []
    assert set(seen) == {"recording", "converting"}


def test_cancelling_the_conversion_stops_it_and_keeps_what_was_converted(tmp_path, monkeypatch) -> None:
    import accelview.capture.service.runner as service

    monkeypatch.setattr(service, "REPORT_S", 0.0)  # a progress report after every chunk converted
    monkeypatch.setattr(service._Spool, "CHUNK", 8192)
    script = _script(tmp_path, """\
        for i in range(3000):
            dev.launch("elementwise", elements=4096)
        """)
    out = tmp_path / "stopped.h5"

    def progress(p: Progress) -> None:
        if p.phase == "converting" and p.converted_bytes >= p.bytes_received // 2:
            svc.cancel()

    svc = CaptureService(CaptureConfig(output=str(out), flush_events=100), [str(script), "1"], on_progress=progress)
    result = svc.run()
    assert result.exit_code == 0 and not result.complete
    assert result.reason.startswith("cancelled while converting (")
    assert result.reason.endswith(" MB of records not converted)")
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == result.reason and trace.self_check() == []
    assert 500 < len(_api_slices(trace, "launch elementwise")) < 3000
    assert not (tmp_path / ".stopped.h5.spool").exists()


def test_progress_while_converting_says_how_far_it_is() -> None:
    p = Progress(elapsed_s=4.0, events=9_000, bytes_received=8_000_000, converted_bytes=2_000_000,
                 phase="converting")
    assert p.describe() == "4.0 s, converting the records: 25% (9,000 events so far)"


def test_progress_says_how_far_behind_the_service_is_only_when_it_is() -> None:
    p = Progress(elapsed_s=2.0, events=12_345, bytes_written=3_000_000, backlog_bytes=BEHIND_BYTES - 1)
    assert p.describe() == "2.0 s, 12,345 events, 3.0 MB written"
    p.backlog_bytes = 6_000_000
    assert p.describe() == "2.0 s, 12,345 events, 3.0 MB written, 6.0 MB still to convert"
