"""Killing ``accelview profile`` at a chosen instant and judging what it leaves (issue 23's kill
test): the tests kill it at a few points, ``benchmarks/kill_points.py`` at 50 random ones per mode.

What a kill must leave: a capture that reads back (after ``accelview convert`` of the spool when
the output is still the placeholder that names it) with every event the child had flushed to
the service before the kill, i.e. every event of the whole frames in the spool at that instant
(or of the whole run, once the final capture is in place and the spool gone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accelview.capture.protocol import wire
from accelview.capture.service.runner import convert_spool
from accelview.capture.service.spool import spool_of, staging_of
from accelview.model.errors import AccelviewError
from accelview.model.store.reader import load_capture, open_capture

WORK = textwrap.dedent("""\
    import sys
    from accelview.capture import sim
    dev = sim.device(0)
    h = sim.host_buffer((256, 256), "bf16")
    w = dev.alloc((256, 256), "bf16")
    for i in range(int(sys.argv[1])):
        dev.launch("elementwise", elements=4096)
        if i % 50 == 0:
            dev.copy(w, h)
    dev.synchronize()
    """)


@dataclass
class Outcome:
    """What one kill left."""

    # "final" (the capture was in place), "spool" (the placeholder and the spool), "nothing" (killed
    # before the service began), "not started" (the service could not start the child)
    state: str
    readable: bool
    flushed: int  # events the service had received whole before the kill
    kept: int  # events in the capture read back
    problem: str = ""

    @property
    def lost(self) -> int:
        """Events flushed before the kill and missing from the capture."""
        return max(0, self.flushed - self.kept)


def spooled_events(spool: Path) -> int:
    """Events in the whole frames of a spool (what the child sent and the service wrote down)."""
    reader = wire.FrameReader(columns=False)
    with open(spool, "rb") as f:
        data = f.read()
    return sum(int(meta.get("events", 0)) for kind, meta, _ in reader.feed(data, final=True) if kind == wire.RECORDS)


def start(folder: Path, launches: int, live: bool, name: str = "run.h5") -> tuple[subprocess.Popen, Path]:
    """``accelview profile`` of the work script into ``folder/name``, in a session of its own."""
    script = folder / "work.py"
    if not script.exists():
        script.write_text(WORK)
    out = folder / name
    cmd = [sys.executable, "-m", "accelview.app.cli", "profile", str(script), str(launches), "-o", str(out), "--force"]
    if live:
        cmd.append("--live")
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    return proc, out


def wait_for(proc: subprocess.Popen, ready: Callable[[], bool], timeout: float = 120.0) -> bool:
    """Poll until ``ready()`` or the process has ended; whether it is ready."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ready():
            return True
        if proc.poll() is not None:
            return ready()
        time.sleep(0.002)
    return False


def kill(proc: subprocess.Popen, service_only: bool = False) -> None:
    """SIGKILL the profile command and its child (``service_only``: the command alone; its child
    then stops itself, having lost the service) and wait until all of them have gone."""
    try:
        if service_only:
            os.kill(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # the child, which is not ours to wait for
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def judge(out: Path, whole_run: int) -> Outcome:
    """What a kill left at ``out``: read it back, converting the spool when only the placeholder is
    there. ``whole_run``: the events of an unkilled run (what a finished capture holds)."""
    spool = spool_of(out)
    flushed = spooled_events(spool) if spool.exists() else whole_run
    try:
        with open_capture(out) as f:
            final = f.finalized
    except AccelviewError as e:
        if not out.exists() and not spool.exists():
            return Outcome("nothing", True, 0, 0)  # killed before the service began
        return Outcome("unreadable", False, flushed, 0, str(e))
    try:
        if not final:
            convert_spool(spool, out, overwrite=True)
        trace = load_capture(out)
        problems = trace.self_check()
        kept = int(trace.metadata.get("capture", {}).get("events", 0))
    except AccelviewError as e:
        return Outcome("final" if final else "spool", False, flushed, 0, str(e))
    if final and trace.incomplete_reason.startswith("the profiled process could not be started"):
        return Outcome("not started", True, 0, 0, trace.incomplete_reason)  # the machine refused the child
    told = "; ".join(problems[:2]) or (trace.incomplete_reason if kept < flushed else "")
    return Outcome("final" if final else "spool", not problems, flushed, kept, told)


def leftovers(folder: Path, out: Path) -> list[str]:
    """Files a kill left beside the capture besides the capture, its spool and the script."""
    expected = {out.name, spool_of(out).name, "work.py", staging_of(out).name}
    return sorted(p.name for p in folder.iterdir() if p.name not in expected)
