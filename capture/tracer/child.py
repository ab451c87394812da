"""The profiled process: runs the user's script (or a built-in workload) under the tracer.

Started by the service (:mod:`.service`) as::

    python -m accelview.capture.tracer.child --fd N --config JSON -- SCRIPT [ARGS...]
    python -m accelview.capture.tracer.child --fd N --config JSON --workload NAME [KEY=VALUE ...]

The script runs the way ``python SCRIPT ARGS`` would run it (as ``python -m cProfile`` and
viztracer do it): ``sys.argv`` is ``[SCRIPT, *ARGS]``, ``sys.path[0]`` its folder, the
working directory is inherited, it runs as ``__main__`` through :mod:`runpy`, and its exit
status becomes the process's. The first ``from accelview.capture import sim`` session it
uses is the traced one (:func:`accelview.capture.sim.runtime.api.set_profiler`). Records go to the
service over pipe ``N`` as they finish (:mod:`.wire`), so a kill loses at most the last
``flush_ms``. SIGTERM (the service cancelling, or a time limit) stops the script and still
sends what it recorded; so does losing the service (the pipe breaks).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import runpy
import signal
import sys
import threading
import traceback
from collections.abc import Sequence
from typing import Any

from ..protocol import wire
from ..protocol.config import CaptureConfig
from ..sim import workloads
from ..sim.runtime import api
from .recorder import Recorder, traced_simulator


class Terminated(BaseException):
    """Raised in the script when the service asks the child to stop (SIGTERM)."""


# the modules of the tracer and, with every accelview.capture.sim.* but the workloads, of the simulator
_TRACER = frozenset({"accelview.capture.sim", "accelview.capture.tracer.recorder",
                     "accelview.capture.protocol.payloads", "accelview.capture.protocol.wire",
                     "accelview.capture.protocol.hostmetrics"})
_collectors: list[Recorder] = []  # the traced session's recorder, once the script has made it
_forked = [False]  # True in a process the script forked: it runs untraced
_sigterm_before = [signal.SIG_DFL]  # what SIGTERM did before the child took it over
_stop_with: list[type[BaseException]] = [Terminated]  # what a stop asked inside the runtime raises after it
# the signal the flush timer wakes the script's thread with to drain (a real-time one: scripts use the others)
FLUSH_SIGNAL = signal.SIGRTMIN + 3 if hasattr(signal, "SIGRTMIN") else None


def _detach_after_fork(out: wire.FrameWriter) -> None:
    """In a process the script forked (``os.fork``, multiprocessing's fork workers): no tracing,
    no frames into the parent's stream (they would interleave with its frames), no hold on the
    pipe, and no END of the parent's capture when it exits. Forked processes are not traced
    (Nsight Systems and Perfetto follow them only when asked)."""
    _forked[0] = True
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:  # a SIGTERM stops the fork as it would untraced
        with contextlib.suppress(ValueError):  # (ValueError: not the main thread)
            signal.signal(signal.SIGTERM, _sigterm_before[0])
    if signal.getsignal(signal.SIGINT) is _on_sigterm:  # and a Ctrl-C
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGINT, signal.default_int_handler)
    api.set_profiler(None)
    if _collectors:
        _collectors[0].detach()
    out.detach()


def _on_sigterm(signum: int, frame: Any) -> None:
    """Stop the script: at once when it is in its own code; inside the simulator or the tracer,
    once the API call it is in has been recorded (an exception in the middle of an engine step,
    a copy's chunks or the hook's two appends left a device that deadlocks in the last drain, or
    a call whose numbers and names do not pair up); never between two frames of a drain."""
    rec = _collectors[0] if _collectors else None
    stop = KeyboardInterrupt if signum == signal.SIGINT else Terminated
    if rec is not None and (rec.draining or _in_tracer(frame)):
        _stop_with[0] = stop
        rec.request_stop()
        return
    raise stop()


def _on_flush_signal(signum: int, frame: Any) -> None:
    """The flush timer's wake-up (the script has not called the runtime since a drain fell due):
    drain here when the script's thread is in its own code; inside the simulator, the tracer or
    a drain it does nothing, as the hook drains at the end of the call (the drain is due)."""
    rec = _collectors[0] if _collectors and not _forked[0] else None
    if rec is None or rec.draining or _in_tracer(frame):
        return
    with contextlib.suppress(Exception):  # a drain that fails here must not raise in the script's code
        rec.idle_drain()


def _wake_main_thread() -> None:
    """Have the main thread (the script's) run :func:`_on_flush_signal` between two of its bytecodes."""
    with contextlib.suppress(OSError, ValueError):
        signal.pthread_kill(threading.main_thread().ident or 0, FLUSH_SIGNAL)


def _in_tracer(frame: Any) -> bool:
    """Whether ``frame`` or a caller of it runs the simulator's or the tracer's own code (the
    built-in workloads' drivers are the script's side)."""
    internal = {m.__file__ for name, m in list(sys.modules.items())
                if (name in _TRACER or name.startswith("accelview.capture.sim.")) and name != workloads.__name__
                and getattr(m, "__file__", None)}
    while frame is not None:
        if frame.f_code.co_filename in internal:
            return True
        frame = frame.f_back
    return False


def _stop_after_drain() -> None:
    _collectors[0].stop_requested = False
    raise _stop_with[0]()


def run_script(path: str, args: Sequence[str]) -> tuple[int, str]:
    """Run ``path`` as ``__main__`` with ``args``; returns (exit status, error summary)."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    sys.argv = [path, *args]
    folder = os.path.dirname(os.path.abspath(path))
    if sys.path:
        sys.path[0] = folder
    else:
        sys.path.insert(0, folder)
    try:
        runpy.run_path(path, run_name="__main__")
        return 0, ""
    except SystemExit as e:
        return _exit_status(e.code)
    except Terminated:
        return 128 + signal.SIGTERM, "stopped by the capture service"
    except KeyboardInterrupt:
        return 130, "KeyboardInterrupt"
    except BaseException as e:  # the script's own error: report it like python would
        traceback.print_exc()
        return 1, f"{type(e).__name__}: {e}"
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0


def _exit_status(code: Any) -> tuple[int, str]:
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code & 0xFF, "" if code == 0 else f"SystemExit({code})"
    print(code, file=sys.stderr)
    return 1, str(code)


def run_workload(name: str, params: Sequence[str]) -> tuple[int, str]:
    """A built-in workload; a bad parameter is reported like a script error."""
    try:
        workloads.run(name, params)
        return 0, ""
    except Terminated:
        return 128 + signal.SIGTERM, "stopped by the capture service"
    except (ValueError, MemoryError) as e:
        print(f"accelview profile: {e}", file=sys.stderr)
        return 2, str(e)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the child; returns the script's exit status."""
    p = argparse.ArgumentParser(prog="python -m accelview.capture.tracer.child")
    p.add_argument("--fd", type=int, required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--workload")
    p.add_argument("target", nargs=argparse.REMAINDER)
    ns = p.parse_args(argv)
    target = ns.target[1:] if ns.target[:1] == ["--"] else ns.target
    config = CaptureConfig.from_json(ns.config)
    # The service has gone (killed, crashed): stop the script as SIGPIPE would, rather than run untraced.
    out = wire.FrameWriter(ns.fd, on_broken=lambda: os.kill(os.getpid(), signal.SIGTERM))
    os.register_at_fork(after_in_child=lambda: _detach_after_fork(out))
    collector = _collectors
    what = f"workload {ns.workload}" if ns.workload else " ".join(target)
    # Deterministic: what went in (target, arguments), not where or as which process it ran.
    extra = {"profile": {"target": what, "argv": list(target)}}
    process = f"python {what}"
    if not config.deterministic:
        extra["profile"].update(cwd=os.getcwd(), pid=os.getpid())
        process += f" (pid {os.getpid()})"

    def factory(asked: dict[str, Any]) -> Any:
        if not collector:
            collector.append(traced_simulator(config, out.send, asked, process, extra))
            collector[0].after_drain = _stop_after_drain
            if FLUSH_SIGNAL is not None and threading.current_thread() is threading.main_thread():
                collector[0].wake = _wake_main_thread
        return collector[0].sim

    api.set_profiler(factory)
    _sigterm_before[0] = signal.signal(signal.SIGTERM, _on_sigterm)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # Ctrl-C: where the records are whole
        signal.signal(signal.SIGINT, _on_sigterm)
    if FLUSH_SIGNAL is not None:
        signal.signal(FLUSH_SIGNAL, _on_flush_signal)
    if ns.workload:
        factory({})
        code, error = run_workload(ns.workload, target)
    else:
        code, error = run_script(target[0], target[1:])
    if _forked[0]:  # a fork of the script returned here: the capture is its parent's to end
        return code
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the last drain runs to its end (the service kills if need be)
    api.set_profiler(None)
    if collector:
        try:
            collector[0].finish(code, error)
        except Exception as e:  # the last drain failed: what was sent before stays, and the service learns why
            traceback.print_exc()
            out.send(wire.END, {"exit_code": code or 1, "error": f"tracer: {type(e).__name__}: {e}", "events": 0})
    else:
        out.send(wire.END, {"exit_code": code, "error": error, "events": 0}, None)
    out.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
