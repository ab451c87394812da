"""``accelview profile`` when a run does not simply end: killed or signalled scripts, forks, time
limits, a killed or failing service and its spool, cancelled conversions, progress (a real child
process per test, each about half a second)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.capture.protocol.config import CaptureConfig
from accelview.capture.service.runner import BEHIND_BYTES, CaptureService, Progress
from accelview.model.store.reader import load_capture
from profile_scripts import api_slices, write_script


@pytest.mark.parametrize("live", [False, True], ids=["spooled", "live"])
def test_a_child_killed_with_sigkill_leaves_a_readable_incomplete_capture(tmp_path, live) -> None:
    script = write_script(tmp_path, """\
        for i in range(400):
            dev.launch("elementwise", elements=4096)
        os.kill(os.getpid(), 9)
        """)
    out = tmp_path / "killed.h5"
    result = CaptureService(CaptureConfig(output=str(out), flush_events=100, live=live), [str(script), "10"]).run()
    assert result.exit_code == 128 + 9 and not result.complete
    trace = load_capture(out)
    assert not trace.complete and "SIGKILL" in trace.incomplete_reason
    launches = len(api_slices(trace, "launch elementwise"))
    assert 300 <= launches < 400  # everything up to the last drain before the kill
    assert len(api_slices(trace, "launch gemm")) == 10 and trace.self_check() == []


def test_a_forked_child_of_the_script_is_not_traced_and_cannot_end_the_capture(tmp_path) -> None:
    """A forked process inherits the tracer and the pipe: it must not write frames into the
    parent's stream (they would interleave), nor end the capture when it exits."""
    script = write_script(tmp_path, """\
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
    assert len(api_slices(trace, "launch gemm")) == 2 + 25  # every call of the traced process, in one stream
    assert len(api_slices(trace, "launch elementwise")) == 0  # the forked child's: not traced


def test_the_capture_ends_with_the_script_not_with_a_fork_it_left_running(tmp_path) -> None:
    script = write_script(tmp_path, """\
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
    script = write_script(tmp_path, """\
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


def test_the_service_is_not_left_with_the_pipe_open(tmp_path) -> None:
    import gc

    from accelview.model import forking

    gc.collect()  # captures loaded by earlier tests close their files when collected: not during this one
    forking.reap(block=True)  # nor earlier tests' forked helpers, whose pipes close when they are reaped
    before = set(os.listdir("/proc/self/fd"))
    CaptureService(CaptureConfig(output=str(tmp_path / "fd.h5")), [str(write_script(tmp_path)), "1"]).run()
    # new descriptors left open, by what they point at (a count would also see others' closes)
    left = {fd: os.readlink(f"/proc/self/fd/{fd}") for fd in set(os.listdir("/proc/self/fd")) - before
            if os.path.exists(f"/proc/self/fd/{fd}")}
    assert left == {}


def test_the_profile_command_stopped_by_sigterm_closes_the_capture(tmp_path) -> None:
    """A kill of ``accelview profile`` itself (or a closed terminal's SIGHUP) is a cancel: the
    script stops, and what it sent is converted and closed, not left in the spool."""
    import signal
    import subprocess
    import sys
    import time

    script = write_script(tmp_path, """\
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
    assert len(api_slices(trace, "launch elementwise")) > 1000 and not spool.exists()


def test_a_killed_profile_command_leaves_a_spool_that_convert_turns_into_the_capture(tmp_path, capfd) -> None:
    """SIGKILL gives the service no chance to convert: the file it started says where the
    records are and how to convert them, and ``accelview convert`` does it."""
    import subprocess
    import sys
    import time

    script = write_script(tmp_path, """\
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
    assert len(api_slices(trace, "launch elementwise")) > 1000 and trace.self_check() == []
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
            CaptureService(CaptureConfig(output=str(out)), [str(write_script(tmp_path)), "30"]).run()
    assert spool.stat().st_size > 0  # what the script sent is not lost with the service's bug
    trace = load_capture(out)
    assert trace.incomplete_reason == (f"the capture service stopped (RuntimeError); what the script sent is in "
                                       f"{spool}: accelview convert {spool} {out} --force")
    assert main(["convert", str(spool), str(out), "--force"]) == 0
    assert len(api_slices(load_capture(out), "launch gemm")) == 30 and not spool.exists()


def test_a_time_limit_stops_the_script_and_keeps_the_capture(tmp_path) -> None:
    script = write_script(tmp_path, """\
        while True:
            dev.launch("elementwise", elements=4096)
        """)
    out = tmp_path / "limited.h5"
    result = CaptureService(CaptureConfig(output=str(out), max_seconds=1.0), [str(script), "1"]).run()
    assert result.exit_code == 128 + 15 and result.reason == "time limit reached (1 s)"
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == "time limit reached (1 s)"
    assert len(api_slices(trace, "launch elementwise")) > 0 and trace.self_check() == []


def test_converting_after_the_script_gives_the_capture_converting_live_gives(tmp_path) -> None:
    script = write_script(tmp_path)
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


def test_cancelling_the_conversion_stops_it_and_keeps_what_was_converted_and_the_spool(tmp_path, monkeypatch) -> None:
    import accelview.capture.service.runner as service

    monkeypatch.setattr(service, "REPORT_S", 0.0)  # a progress report after every chunk converted
    monkeypatch.setattr(service.Spool, "CHUNK", 8192)
    script = write_script(tmp_path, """\
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
    spool = tmp_path / ".stopped.h5.spool"
    assert " MB of records not converted); all the records are still in " in result.reason
    assert result.reason.endswith(f"accelview convert {spool} {out} --force")
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == result.reason and trace.self_check() == []
    assert 500 < len(api_slices(trace, "launch elementwise")) < 3000
    assert spool.exists()  # nothing is deleted that was not converted: convert it all later
    assert main(["convert", str(spool), str(out), "--force"]) == 0 and not spool.exists()
    assert len(api_slices(load_capture(out), "launch elementwise")) == 3000


def test_progress_while_converting_says_how_far_it_is() -> None:
    p = Progress(elapsed_s=4.0, events=9_000, bytes_received=8_000_000, converted_bytes=2_000_000,
                 phase="converting")
    assert p.describe() == "4.0 s, converting the records: 25% (9,000 events so far)"


def test_progress_says_how_far_behind_the_service_is_only_when_it_is() -> None:
    p = Progress(elapsed_s=2.0, events=12_345, bytes_written=3_000_000, backlog_bytes=BEHIND_BYTES - 1)
    assert p.describe() == "2.0 s, 12,345 events, 3.0 MB written"
    p.backlog_bytes = 6_000_000
    assert p.describe() == "2.0 s, 12,345 events, 3.0 MB written, 6.0 MB still to convert"
