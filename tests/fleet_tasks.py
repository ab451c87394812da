"""Module-level per-capture functions for the fleet tests (Dask workers import them by name) and
a small simulated fleet. What a task does depends on the capture's file name, so one map can mix
outcomes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from accelview.model.errors import CaptureError
from accelview.model.fleet.extract import extract_fresh

RELEASE = "release"  # a hung task ends once this file appears beside its capture


def write_fleet(out: Path, hosts: int = 4, devices: int = 2, steps: int = 6) -> list[Path]:
    """A dp-straggler cluster (host1's device 1 slow, clocks drifting) written one capture per host."""
    from accelview.capture.sim import workloads
    from accelview.model.store.writer import write_capture

    cluster = workloads.run_cluster("dp-straggler", {"hosts": hosts, "devices": devices, "steps": steps,
                                                     "drift_ppm": 50.0, "jitter_ns": 2000.0}, seed=5)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for h, t in enumerate(cluster.traces()):
        paths.append(out / f"host{h}.h5")
        write_capture(t, paths[-1])
    return paths


def _wait_release(path: str) -> None:
    release = Path(path).with_name(RELEASE)
    for _ in range(1200):
        if release.exists():
            return
        time.sleep(0.1)


def probe(path: str) -> dict:
    """The file's first line and the worker's process id; a file named ``kill*`` ends its worker
    process at once, ``hang*`` waits for the release file, ``bad*`` is unreadable."""
    name = Path(path).name
    if name.startswith("kill"):
        os._exit(3)
    if name.startswith("hang"):
        _wait_release(path)
    if name.startswith("bad"):
        raise CaptureError(path, "not an HDF5 file\nsecond line")
    return {"text": Path(path).read_text().splitlines()[0], "pid": os.getpid()}


def extract_or_die(path: str) -> dict:
    """The fleet extract, except that host1's capture ends its worker process."""
    if Path(path).name == "host1.h5":
        os._exit(3)
    return extract_fresh(path)
