"""The fleet analysis in one process: the FleetReport's hosts ranked by lateness with their
clocks and utilisation, extracts read back from the sidecars, a host drilled into on the fleet's
timebase, and inputs that are not one fleet named in one line."""

from __future__ import annotations

import json
import shutil
import sys

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.model.cluster import align_cluster
from accelview.model.errors import AccelviewError, CaptureError
from accelview.model.fleet import extract as extract_module
from accelview.model.fleet.analyze import analyze_fleet
from accelview.model.fleet.cache import sidecar_path
from accelview.model.fleet.combine import FLEET_BINS
from accelview.model.fleet.drill import host_timeline
from accelview.model.fleet.extract import map_of
from accelview.model.store.reader import load_capture
from fleet_tasks import write_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """4 hosts × 2 devices of dp-straggler (host1's device 1 late), one capture per host."""
    return write_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def report(fleet):
    return analyze_fleet(fleet[0].parent, cache=False)


def test_hosts_are_ranked_by_lateness_with_clock_and_utilisation(report, fleet):
    hosts = report["hosts"]
    assert [h["rank"] for h in hosts] == [1, 2, 3, 4]
    assert hosts[0]["host"] == "host1" and hosts[0]["path"] == str(fleet[1])
    assert [h["late_ns"] for h in hosts] == sorted((h["late_ns"] for h in hosts), reverse=True)
    assert hosts[0]["lost_ns"] > 0 and all(h["lost_ns"] < hosts[0]["lost_ns"] for h in hosts[1:])
    t0, t1 = report["span_ns"]
    assert t1 > t0
    for h in hosts:
        assert h["devices"] == 2 and h["compute_ns"] > 0 and h["communication_ns"] > 0
        assert len(h["utilisation"]) == FLEET_BINS and all(0.0 <= u <= 1.0 for u in h["utilisation"])
        assert np.mean(h["utilisation"]) > 0.3  # dp-straggler keeps its devices busy
        assert h["clock"]["steps"] == 0 and h["clock"]["synced"]
        assert map_of(h["clock"]["map"]).segments  # the map round-trips from its JSON
    by_host = {h["host"]: h for h in hosts}
    assert by_host["host0"]["clock"]["error_ns"] == 0.0 < by_host["host2"]["clock"]["error_ns"]
    assert report["findings"][0]["culprit"] == {"host": "host1", "device": 1}
    assert report["failures"] == {} and report["partial"] is False
    assert json.loads(json.dumps(report)) == report


def test_a_second_analysis_reads_the_extracts_beside_the_captures(fleet, tmp_path, monkeypatch):
    for p in fleet:
        shutil.copy(p, tmp_path / p.name)
    first = analyze_fleet(tmp_path)
    assert all(sidecar_path(tmp_path / p.name).exists() for p in fleet)

    def no_reading(path):
        raise AssertionError(f"{path} read again")
    monkeypatch.setattr(extract_module, "extract_fresh", no_reading)
    assert analyze_fleet(tmp_path) == first
    assert {h["host"] for h in analyze_fleet(tmp_path, cache=True)["hosts"]} == {"host0", "host1", "host2", "host3"}


def test_a_host_drilled_into_is_on_the_fleets_timebase(report, fleet):
    aligned, _ = align_cluster([load_capture(p) for p in fleet])
    for h in (1, 3):
        t = host_timeline(report, f"host{h}")
        assert np.array_equal(t.slices.start_ns, aligned[h].slices.start_ns)
        assert np.array_equal(t.slices.dur_ns, aligned[h].slices.dur_ns)
    with pytest.raises(AccelviewError, match="host9: not a host"):
        host_timeline(report, "host9")


def test_inputs_that_are_not_one_fleet_are_one_line(fleet, tmp_path):
    twice = tmp_path / "again.h5"
    shutil.copy(fleet[1], twice)
    with pytest.raises(CaptureError, match="host1 twice"):
        analyze_fleet([*fleet, twice], cache=False)
    with pytest.raises(AccelviewError, match=r"none of the 1 captures could be analysed: .*no such file"):
        analyze_fleet([tmp_path / "nothing.h5"], cache=False)
    missing = analyze_fleet(fleet[:2], cache=False)
    assert missing["partial"] and set(missing["failures"]) == {"host2", "host3"}


def test_the_command_names_what_failed_and_refuses_bad_options(fleet, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the progress bar is drawn on a terminal only
    for p in fleet:
        shutil.copy(p, tmp_path / p.name)
    data = (tmp_path / "host3.h5").read_bytes()
    (tmp_path / "host3.h5").write_bytes(data[:1000])
    assert main(["analyze", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "PARTIAL: 1 failed" in out.splitlines()[0]
    failed = out[out.index("Failed"):].splitlines()[1:]
    assert len(failed) == 1 and failed[0].strip().startswith(f"{tmp_path / 'host3.h5'}: ")
    assert "4/4 captures" in err and "Traceback" not in err
    assert err.rstrip().splitlines()[-1].startswith(f"accelview: {tmp_path / 'host3.h5'}: ")
    assert main(["analyze", str(tmp_path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["partial"] and list(report["failures"]) == [str(tmp_path / "host3.h5")]
    for bad in (["--workers", "0"], ["--timeout", "0"]):
        assert main(["analyze", str(tmp_path), *bad]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("accelview: --") and "\n" not in err
