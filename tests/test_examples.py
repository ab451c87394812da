"""The example scripts in resources/examples are the built-in workloads, and run as scripts."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from accelview.capture.sim import workloads
from accelview.model.analysis.report import analyze
from accelview.model.store.reader import load_capture

EXAMPLES = Path(__file__).resolve().parents[1] / "resources" / "examples"


def test_every_workload_is_an_example_script():
    scripts = {p.stem.replace("_", "-") for p in EXAMPLES.glob("*.py") if p.stem != "__init__"}
    assert scripts == set(workloads.WORKLOADS) | set(workloads.CLUSTER_WORKLOADS)
    for name, fn in {**workloads.WORKLOADS, **workloads.CLUSTER_WORKLOADS}.items():
        assert fn.__module__.endswith(name.replace("-", "_")) and fn.__doc__


def test_an_example_runs_under_accelview_profile(tmp_path):
    out = tmp_path / "sync.h5"
    r = subprocess.run([sys.executable, "-m", "accelview.app.cli", "profile", str(EXAMPLES / "sync_heavy.py"),
                        "-o", str(out)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    report = analyze(load_capture(out))
    assert report.findings[0].kind == "host-sync"
