"""``accelview profile``: run a script (or a built-in workload) under capture into an HDF5 file.

::

    accelview profile serve.py --batch 8 -o run.h5 [--force] [--open] [--spec PRESET|FILE] [--seed N]
    accelview profile -o run.h5 -- serve.py -o not-ours.txt      # everything after the script is its own
    accelview profile --workload llm --param tokens=8 -o llm.h5

The script runs in a child process the way ``python SCRIPT ARGS`` would (its argv, the current
directory, its exit status passed through); its ``from accelview.capture import sim`` calls
are traced. The service spools what the child sends and converts it into the capture once the
script has ended (``--live``: while it runs). A progress line (elapsed, events, MB written;
then how far the conversion is, or with ``--live`` the MB the service has still to convert
when it falls behind the script) is shown when stderr is a terminal; the last line says where
the capture is and how to open it. Ctrl-C, SIGTERM and SIGHUP stop the script and keep the
capture; once the script has ended, they stop the conversion and keep what was converted, and
the spool, which ``accelview convert`` turns into the whole capture.
"""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# (flags, argparse keywords) of every option; the same list parses options given after the script.
OPTIONS: tuple[tuple[tuple[str, ...], dict[str, Any]], ...] = (
    (("-o", "--output"), {"help": "the capture file to write (.h5)"}),
    (("--force",), {"action": "store_true", "help": "overwrite an existing output file"}),
    (("--open",), {"action": "store_true", "help": "open the app on the capture when done"}),
    (("--workload",), {"help": "run a built-in workload instead of a script"}),
    (("--param",), {"action": "append", "default": [], "metavar": "KEY=VALUE",
                    "help": "a workload parameter (repeatable)"}),
    (("--spec",), {"help": "device preset or spec file (default: what the script asks for, else gen5x16-141g)"}),
    (("--seed",), {"type": int, "help": "simulator seed (default: the script's, else 0)"}),
    (("--devices",), {"type": int, "help": "number of simulated devices"}),
    (("--counter-period-ns",), {"type": int, "default": 10_000, "help": "device counter sampling period"}),
    (("--call-sites",), {"action": argparse.BooleanOptionalAction, "default": False,
                         "help": "record the script's file:line and function on every API call (about doubles "
                                 "the tracer's cost; default: off)"}),
    (("--live",), {"action": "store_true",
                    "help": "convert the records into the capture while the script runs, so it is ready when the "
                            "script ends (default: spool them and convert them after it; a conversion beside the "
                            "script slows it on a machine with few cores)"}),
    (("--off",), {"action": "append", "default": [], "metavar": "SOURCE",
                  "help": "turn a source off: runtime, driver, device, pcie, counters, host_metrics, truth"}),
    (("--max-seconds",), {"type": float, "default": 0.0, "help": "stop the capture after this long"}),
    (("--max-mb",), {"type": float, "default": 0.0, "help": "stop the capture after this many MB received"}),
    (("--deterministic",), {"action": "store_true",
                            "help": "model host time between calls instead of measuring it (identical captures for "
                                    "identical inputs; the default for --workload)"}),
)
_SWITCHES = ("store_true", argparse.BooleanOptionalAction)
# every flag, and whether a value follows it (a BooleanOptionalAction's flag comes with its --no- twin)
_TAKES_VALUE = {f: kw.get("action") not in _SWITCHES for flags, kw in OPTIONS for flag in flags
                for f in ((flag, "--no-" + flag[2:]) if kw.get("action") is _SWITCHES[1] else (flag,))}


def _add_options(p: argparse.ArgumentParser, defaults: bool = True) -> None:
    for flags, kw in OPTIONS:
        p.add_argument(*flags, **(kw if defaults else {**kw, "default": argparse.SUPPRESS}))


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the profile command."""
    _add_options(p)
    p.add_argument("script", nargs="?", help="the Python script to run")
    p.add_argument("script_args", nargs=argparse.REMAINDER, help="its arguments")


def _trailing_options(args: Sequence[str]) -> int:
    """Index where a run of our own options ends ``args`` (len(args) if none)."""
    for k in range(len(args)):
        if args[k] not in _TAKES_VALUE:
            continue
        i = k
        while i < len(args) and args[i] in _TAKES_VALUE:
            i += 2 if _TAKES_VALUE[args[i]] else 1
        if i == len(args):
            return k
    return len(args)


def _split_script_args(args: argparse.Namespace) -> None:
    """``SCRIPT ARGS... -o OUT``: options after the script's arguments are ours (unless ``-o`` came
    before the script, or ``--`` separates them)."""
    rest = list(args.script_args or [])
    if args.script == "--":
        args.script, rest = (rest[0], rest[1:]) if rest else (None, [])
    elif args.output is None:
        k = _trailing_options(rest)
        if k < len(rest):
            tail = argparse.ArgumentParser(prog="accelview profile", add_help=False)
            _add_options(tail, defaults=False)
            tail.parse_args(rest[k:], namespace=args)
            rest = rest[:k]
    args.script_args = rest


def run(args: argparse.Namespace) -> int:
    """Profile, print where the capture is; returns the script's exit status."""
    from accelview.capture.protocol.config import SOURCES, CaptureConfig
    from accelview.capture.service.runner import CaptureService
    from accelview.model.errors import AccelviewError
    from accelview.model.text.values import format_bytes, format_count, format_duration

    _split_script_args(args)
    if not args.output:
        raise AccelviewError("profile: give the capture file to write with -o OUT.h5")
    if args.workload is None and not args.script:
        raise AccelviewError("profile: give a script to run (or --workload NAME)")
    if args.workload is not None and args.script:
        raise AccelviewError("profile: give either a script or --workload, not both")
    if args.script and not Path(args.script).is_file():
        raise AccelviewError(f"{args.script}: no such file")
    bad = [s for s in args.off if s not in SOURCES]
    if bad:
        raise AccelviewError(f"profile: unknown source {bad[0]!r}; sources: {', '.join(SOURCES)}")
    if args.workload is not None:
        from accelview.capture.sim import workloads

        if args.workload in workloads.CLUSTER_WORKLOADS:  # one capture per host, made in this process
            from accelview.app.cli import profile_cluster

            return profile_cluster.run(args)
        try:
            workloads.parse_params(args.workload, args.param)
        except ValueError as e:
            raise AccelviewError(f"profile: {e}") from None
    try:
        config = CaptureConfig(output=args.output, overwrite=args.force, spec=args.spec, seed=args.seed,
                               devices=args.devices, counter_period_ns=args.counter_period_ns,
                               call_sites=args.call_sites, live=args.live,
                               sources={s: s not in args.off for s in SOURCES},
                               max_seconds=args.max_seconds, max_bytes=int(args.max_mb * 1e6),
                               # A built-in workload has no real host work of its own: its host time is modelled.
                               deterministic=args.deterministic or args.workload is not None)
    except ValueError as e:
        raise AccelviewError(f"profile: {e}") from None
    line = _ProgressLine(args.workload or args.script) if sys.stderr.isatty() else None
    service = CaptureService(config, [args.script, *args.script_args] if args.script else (), args.workload,
                             args.param, on_progress=line.update if line else None)
    # Ctrl-C, a kill or a closed terminal: stop the script (again: stop the conversion), keep the capture
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, lambda *_: service.cancel()) for s in stops}
    try:
        result = service.run()
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if line:
            line.clear()
    state = "complete" if result.complete else f"incomplete: {result.reason}"
    p = result.progress
    dropped = f", {format_count(p.dropped)} records dropped" if p.dropped else ""
    print(f"accelview: capture {result.path} ({state}; {format_count(p.events)} events{dropped}, "
          f"{format_bytes(p.bytes_written)}, {format_duration(p.elapsed_s * 1e9)}) — open it with: "
          f"accelview {result.path}",
          file=sys.stderr)
    if args.open:
        from accelview.app.cli.main import has_display

        if has_display():
            from accelview.app.main import run_app

            run_app(str(result.path))
        else:
            print("accelview: no display here, so --open cannot open the app", file=sys.stderr)
    return result.exit_code


class _ProgressLine:
    """One line on stderr rewritten in place: elapsed, events, MB written (and the service's
    backlog when it falls behind the script)."""

    def __init__(self, what: str) -> None:
        self.what = Path(what).name
        self.width = 0

    def update(self, p: Any) -> None:
        text = f"accelview: profiling {self.what}: {p.describe()}"
        sys.stderr.write("\r" + text.ljust(self.width))
        sys.stderr.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
