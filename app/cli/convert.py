"""``accelview convert IN OUT``: between .h5 captures and Chrome trace JSON (for Perfetto UI and
chrome://tracing), optionally gzipped; and from the spool a killed ``accelview profile`` left
(``.NAME.h5.spool``) into the capture it was recording."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from accelview.app.cli.cluster_input import load_input
from accelview.model.errors import AccelviewError, CaptureError
from accelview.model.loader import load_trace
from accelview.model.text.values import format_count

JSON_SUFFIXES = (".json", ".json.gz")
SPOOL_SUFFIX = ".spool"  # what `accelview profile` spools while the script runs (capture.service.spool_of)
CAPTURE_SUFFIXES = (".h5", ".hdf5")


def configure(p: argparse.ArgumentParser) -> None:
    """Arguments of the convert command."""
    p.add_argument("input", nargs="+", help="capture (.h5), trace (.json, .json.gz), a directory of per-rank traces, "
                                            "a cluster's host captures (several, or their directory), or the "
                                            ".NAME.h5.spool a killed `accelview profile` left (converted into the "
                                            "capture)")
    p.add_argument("output", help="OUT.h5, OUT.json or OUT.json.gz")
    p.add_argument("--force", action="store_true", help="overwrite OUTPUT if it exists")
    p.add_argument("--no-counters", action="store_true",
                   help="to JSON as a profiler without hardware counters records it: names, shapes and FLOPs only")


def run(args: argparse.Namespace) -> int:
    """Read the input in any format accelview reads and write the output's format."""
    out = Path(args.output)
    name = out.name.lower()
    if not name.endswith(JSON_SUFFIXES + CAPTURE_SUFFIXES):
        raise AccelviewError(f"{out}: unknown output format (use .h5, .json or .json.gz)")
    if args.no_counters and not name.endswith(JSON_SUFFIXES):
        raise AccelviewError(f"{out}: --no-counters writes Chrome JSON (.json, .json.gz)")
    if out.exists() and not args.force:
        raise CaptureError(out, "already exists (use --force to overwrite it)")
    if len(args.input) == 1 and Path(args.input[0]).name.endswith(SPOOL_SUFFIX):
        return _recover(Path(args.input[0]), out)
    trace = load_input(args.input)
    if name.endswith(CAPTURE_SUFFIXES):
        from accelview.model.store.writer import write_capture

        write_capture(trace, out, overwrite=True)
    else:
        from accelview.model.export.chrome import export_chrome

        tmp = out.with_name(f".{out.name}.partial")
        try:
            export_chrome(trace, tmp, counters=not args.no_counters)
            os.replace(tmp, out)
        except OSError as e:
            raise CaptureError(out, f"cannot write: {e.strerror or e}") from None
        finally:
            tmp.unlink(missing_ok=True)
    counts = (f"{format_count(len(trace.slices))} slices, {format_count(len(trace.flows))} flows, "
              f"{0 if args.no_counters else format_count(len(trace.counters))} counter samples")
    del trace
    _read_back(out)
    print(f"wrote {out} ({counts})")
    return 0


def _read_back(out: Path) -> None:
    """Never report success for a file accelview cannot read: load what was written; a file that
    does not load is removed and the problem reported (exit 2)."""
    from accelview.model.memory import NotEnoughMemory

    try:
        load_trace(out)
    except NotEnoughMemory as e:  # nothing says the file is wrong: keep it
        raise CaptureError(out, f"was written but could not be read back to check it ({e.problem})") from None
    except AccelviewError as e:
        out.unlink(missing_ok=True)
        raise CaptureError(out, f"was written but does not read back, so it was removed ({e})") from None


def _recover(spool: Path, out: Path) -> int:
    """Convert what a killed capture service spooled and never converted; it must become a capture."""
    if not out.name.lower().endswith(CAPTURE_SUFFIXES):
        raise AccelviewError(f"{out}: a spool converts into a capture (.h5)")
    from accelview.capture.service.runner import convert_spool

    result = convert_spool(spool, out, overwrite=True)
    print(f"wrote {out} ({format_count(result.progress.events)} events; incomplete: {result.reason})")
    return 0
