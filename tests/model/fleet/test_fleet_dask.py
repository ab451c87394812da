"""The fleet on a LocalCluster of 2 worker processes (one for the whole module): one task per
capture path with the same results as in one process and as the cluster analysis of the merged
captures; a killed worker, an unreadable capture and a hung task each reported by name in one
line while the rest of the answer comes back, marked partial."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from accelview.app.cli.main import main
from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import load_cluster, split_hosts
from accelview.model.fleet.analyze import analyze_fleet, fleet_report
from accelview.model.fleet.engine import WORKER_DIED, close_client, map_captures, open_client
from fleet_tasks import RELEASE, extract_or_die, probe, write_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """4 hosts × 2 devices of dp-straggler (host1's device 1 late), one capture per host."""
    return write_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def client():
    c = open_client(workers=2, dashboard=False)
    yield c
    close_client(c)


def _files(tmp_path, names):
    paths = []
    for name in names:
        p = tmp_path / name
        p.write_text(f"{name} content\nmore\n")
        paths.append(str(p))
    return paths


def _texts(result):
    return {p: r["text"] for p, r in result.results.items()}


def test_here_and_on_dask_give_the_same_results(tmp_path, client):
    paths = _files(tmp_path, [f"host{i}.h5" for i in range(6)])
    seen = []
    here = map_captures(probe, paths)
    there = map_captures(probe, paths, client=client, progress=lambda d, t: seen.append((d, t)))
    assert _texts(here) == _texts(there) == {p: f"host{i}.h5 content" for i, p in enumerate(paths)}
    assert not there.failures and not there.partial
    assert seen == [(d, 6) for d in range(1, 7)]
    assert {r["pid"] for r in there.results.values()}.isdisjoint({r["pid"] for r in here.results.values()})


def test_results_left_on_the_workers_come_back_as_futures_and_failures_as_lines(tmp_path, client):
    """fetch=False: what the fleet's combine (a task beside them) uses stays on the workers; the
    client holds futures, and each failure still as its one line."""
    from distributed import Future

    paths = _files(tmp_path, [f"host{i}.h5" for i in range(3)])
    missing = str(tmp_path / "host9.h5")
    there = map_captures(probe, [*paths, missing], client=client, fetch=False)
    assert set(there.results) == set(paths) and all(isinstance(f, Future) for f in there.results.values())
    assert {p: f.result()["text"] for p, f in there.results.items()} == _texts(map_captures(probe, paths))
    assert list(there.failures) == [missing] and "\n" not in there.failures[missing]


def test_unreadable_and_killed_are_named_the_rest_comes_back(tmp_path, client):
    paths = _files(tmp_path, ["host0.h5", "bad1.h5", "host2.h5", "kill3.h5", "host4.h5"])
    out = map_captures(probe, paths, client=client, timeout_s=60)
    assert out.partial
    assert out.failures == {paths[1]: f"{paths[1]}: not an HDF5 file second line", paths[3]: WORKER_DIED}
    assert sorted(out.results) == sorted([paths[0], paths[2], paths[4]])
    here = map_captures(probe, [p for p in paths if p != paths[3]])
    assert here.failures == {paths[1]: out.failures[paths[1]]}
    assert _texts(here) == _texts(out)


def test_a_hung_task_is_bounded_by_the_timeout(tmp_path, client):
    paths = _files(tmp_path, ["host0.h5", "hang1.h5", "host2.h5"])
    seen = []
    try:
        out = map_captures(probe, paths, client=client, timeout_s=2, progress=lambda d, t: seen.append(d))
    finally:
        (tmp_path / RELEASE).touch()  # let the hung worker go
    assert out.failures == {paths[1]: "timed out after 2 s"}
    assert sorted(out.results) == [paths[0], paths[2]]
    assert seen[-1] == 3


def test_the_fleet_on_dask_is_the_fleet_in_one_process_and_the_merged_cluster(fleet, client):
    here = analyze_fleet(fleet, cache=False)
    there = analyze_fleet(fleet, client=client, cache=False)
    assert json.dumps(here, sort_keys=True) == json.dumps(there, sort_keys=True)
    assert not there["partial"] and there["failures"] == {}
    # the cluster analysis of the captures merged on host0's clock: the same answer, durations
    # aside, which each host measured on its own clock (within its drift, 50 ppm here)
    merged = analyze_cluster(split_hosts(load_cluster([str(p) for p in fleet])))
    top, old = there["findings"][0], merged["findings"][0]
    assert top["culprit"] == old["culprit"] == {"host": "host1", "device": 1}
    assert top["evidence"]["cause"] == old["evidence"]["cause"]
    assert top["evidence"]["late_collectives"] == old["evidence"]["late_collectives"] > 0
    assert top["evidence"]["mean_late_ns"] == pytest.approx(old["evidence"]["mean_late_ns"], abs=2)
    assert there["communication"]["collectives"] == merged["communication"]["collectives"]
    for new, was in zip(there["communication"]["devices"], merged["communication"]["devices"], strict=True):
        assert (new["host"], new["device"], new["collectives"]) == (was["host"], was["device"], was["collectives"])
        for k in ("compute_ns", "communication_ns", "skew_ns", "transfer_ns"):
            assert new[k] == pytest.approx(was[k], rel=1e-4, abs=5)
    assert there["hosts"][0]["host"] == "host1"
    assert [h["rank"] for h in there["hosts"]] == [1, 2, 3, 4]


def test_a_killed_worker_and_a_truncated_capture_leave_the_rest_intact(fleet, client, tmp_path):
    copies = []
    for p in fleet:
        copies.append(tmp_path / p.name)
        shutil.copy(p, copies[-1])
    data = copies[2].read_bytes()
    copies[2].write_bytes(data[: len(data) // 3])
    out = fleet_report(map_captures(extract_or_die, [str(p) for p in copies], client=client, timeout_s=120))
    assert out["partial"]
    assert set(out["failures"]) == {str(copies[1]), str(copies[2])}
    assert out["failures"][str(copies[1])] == WORKER_DIED
    bad = out["failures"][str(copies[2])]
    assert bad.startswith(f"{copies[2]}: ") and "\n" not in bad
    rest = analyze_fleet([copies[0], copies[3]], cache=False)
    assert rest["failures"] == {"host1": "no capture of this host among the inputs",
                                "host2": "no capture of this host among the inputs"}
    for k in ("hosts", "findings", "communication", "span_ns"):
        assert out[k] == rest[k]
    assert sorted(h["host"] for h in out["hosts"]) == ["host0", "host3"]
    assert out["communication"]["collectives"] > 0


def test_the_command_on_a_running_scheduler(fleet, client, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the progress bar is drawn on a terminal only
    folder = str(fleet[0].parent)
    assert main(["analyze", folder, "--json"]) == 0
    here = json.loads(capsys.readouterr().out)
    assert main(["analyze", folder, "--json", "--scheduler", client.scheduler.address]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == here
    assert err.rstrip().endswith("4/4 captures") and "dashboard" not in err  # a running cluster's own
    assert main(["analyze", folder, "--scheduler", client.scheduler.address]) == 0
    table = capsys.readouterr().out.split("Hosts by lateness")[1].splitlines()
    assert table[0] == "" and table[1].split()[:4] == ["host", "rank", "late", "lost"]  # the title on its own line
    assert table[2].split()[:2] == ["host1", "1"] and len(table) == 2 + 4 + 2  # title, header, hosts, legend
    assert table[-2].startswith("  late, lost: totals over all the collectives")
