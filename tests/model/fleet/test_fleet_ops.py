"""Fleet op statistics from small simulated host captures: the per-capture summary agrees with the
Statistics table, the second query is read from the cache (nothing recomputed), a changed capture
is summarised again, an unreadable one is named and the rest answered, and grouping is honest
about percentiles."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from accelview.capture.sim import workloads
from accelview.model.analysis.stats_table import StatsSource
from accelview.model.fleet import opstats
from accelview.model.fleet.optable import gather_ops, group, parse_by, select, sort_rows
from accelview.model.fleet.query import FIELDS, compile_query
from accelview.model.store.writer import write_capture


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A 3-host × 2-device data-parallel run with a straggler, one capture per host."""
    cluster = workloads.run_cluster("dp-straggler", {"hosts": 3, "devices": 2, "steps": 4}, seed=5)
    out = tmp_path_factory.mktemp("made")
    traces = cluster.traces()
    for h, t in enumerate(traces):
        write_capture(t, out / f"host{h}.h5")
    return out, traces


@pytest.fixture
def fleet(made, tmp_path):
    """A fresh copy of the captures (no cache beside them yet)."""
    for p in sorted(made[0].glob("*.h5")):
        shutil.copy2(p, tmp_path / p.name)
    return tmp_path


def _counting(monkeypatch):
    calls = []
    real = opstats.op_stats

    def counted(trace):
        calls.append(trace.source)
        return real(trace)
    monkeypatch.setattr(opstats, "op_stats", counted)
    return calls


def _paths(folder):
    return sorted(str(p) for p in folder.glob("*.h5"))


def test_a_summary_agrees_with_the_statistics_table(made):
    trace = made[1][1]
    s = opstats.op_stats(trace)
    cols = s["columns"]
    assert set(cols) == set(FIELDS) and all(len(c) == s["rows"] for c in cols.values())
    assert set(cols["host"]) == {"host1"} and set(cols["device"]) == {0, 1}
    by_name = StatsSource(trace).table("name")
    for key, count, total in zip(by_name.keys, by_name.count, by_name.total_ns, strict=True):
        rows = [i for i, op in enumerate(cols["op"]) if op == key]
        assert sum(cols["count"][i] for i in rows) == count
        assert sum(cols["total_ns"][i] for i in rows) == total
    for i in range(s["rows"]):
        assert cols["p50_ns"][i] <= cols["p95_ns"][i] <= cols["max_ns"][i]
        assert cols["mean_ns"][i] == round(cols["total_ns"][i] / cols["count"][i])
    assert "compute" in cols["class"]  # the matrix ops, classed from their counters


def test_second_query_reads_the_cache_and_a_changed_capture_is_summarised_again(fleet, monkeypatch):
    calls = _counting(monkeypatch)
    first = gather_ops(_paths(fleet))
    assert len(calls) == 3 and sorted(first.computed) == _paths(fleet)
    assert sorted((fleet / f".host{h}.h5.fleet.json").exists() for h in range(3)) == [True] * 3
    second = gather_ops(_paths(fleet))
    assert len(calls) == 3 and second.computed == []  # not one capture read again
    assert second.rows == first.rows and second.captures == first.captures

    # host2's capture replaced by host0's (a new run): its summary is stale and recomputed
    changed = fleet / "host2.h5"
    shutil.copyfile(fleet / "host0.h5", changed)
    os.utime(changed, ns=(changed.stat().st_atime_ns, changed.stat().st_mtime_ns + 1_000_000))
    third = gather_ops(_paths(fleet))
    assert len(calls) == 4 and third.computed == [str(changed)]
    hosts = {r[0] for r in third.rows}
    assert hosts == {"host0 (host0.h5)", "host0 (host2.h5)", "host1"}  # two captures of host0, told apart


def test_an_unreadable_capture_is_named_and_the_rest_answer(fleet):
    (fleet / "host1.h5").write_bytes(b"not a capture at all")
    out = gather_ops([*_paths(fleet), str(fleet / "gone.h5")])
    assert set(out.failures) == {str(fleet / "host1.h5"), str(fleet / "gone.h5")}
    assert all("\n" not in line for line in out.failures.values())
    assert "no such file" in out.failures[str(fleet / "gone.h5")]
    assert {r[0] for r in out.rows} == {"host0", "host2"}
    assert out.captures == [str(fleet / "host0.h5"), str(fleet / "host2.h5")]


def test_grouping_sums_counts_and_totals_and_bounds_the_percentiles(fleet):
    rows = gather_ops(_paths(fleet)).rows
    at = {f: i for i, f in enumerate(FIELDS)}
    coll = select(rows, compile_query("op ~ '*all_reduce*'"))
    assert coll and all("all_reduce" in r[at["op"]] for r in coll)
    per_host = group(coll, parse_by("host"))
    assert not per_host.exact and per_host.columns == ("host", "class", "count", "total_ns", "mean_ns",
                                                       "max_p50_ns", "max_p95_ns", "max_ns")
    assert sorted(r[0] for r in per_host.rows) == ["host0", "host1", "host2"]
    for r in per_host.rows:
        mine = [x for x in coll if x[at["host"]] == r[0]]
        assert r[2] == sum(x[at["count"]] for x in mine) and r[3] == sum(x[at["total_ns"]] for x in mine)
        assert r[4] == round(r[3] / r[2])
        assert r[5] == max(x[at["p50_ns"]] for x in mine) and r[7] == max(x[at["max_ns"]] for x in mine)
    finest = group(coll, parse_by("host,device,lane,op"))
    assert finest.exact and "p95_ns" in finest.columns and len(finest.rows) == len(coll)
    ordered = sort_rows(per_host)
    totals = [r[3] for r in ordered.rows]
    assert totals == sorted(totals, reverse=True)
    assert [r[0] for r in sort_rows(per_host, "host").rows] == ["host0", "host1", "host2"]
    assert len(sort_rows(per_host, top=2).rows) == 2


def test_a_group_of_several_classes_says_mixed(fleet):
    rows = gather_ops(_paths(fleet)).rows
    at = {f: i for i, f in enumerate(FIELDS)}
    by_class = group(rows, parse_by("host,class"))
    classes = {h: {r[1] for r in by_class.rows if r[0] == h} for h in ("host0", "host1", "host2")}
    assert all(len(c) > 1 for c in classes.values())  # each host runs ops of several classes
    per_host = group(rows, parse_by("host"))
    assert {r[0]: r[1] for r in per_host.rows} == dict.fromkeys(classes, "mixed")
    # a group of one class keeps it, whatever the grouping
    one = [r for r in rows if r[at["class"]] == by_class.rows[0][1]]
    assert {r[1] for r in group(one, parse_by("host")).rows} == {by_class.rows[0][1]}
    assert {r[1] for r in group(one, parse_by("op")).rows} == {by_class.rows[0][1]}


def test_the_dask_engine_gives_the_same_rows(fleet):
    here = gather_ops(_paths(fleet))
    for side in fleet.glob(".*.fleet.json"):
        side.unlink()
    on_dask = gather_ops(_paths(fleet), workers=1)
    assert sorted(on_dask.computed) == _paths(fleet)
    assert on_dask.rows == here.rows and on_dask.failures == {}


def test_same_file_names_in_two_folders_are_told_apart_by_path(made, tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        shutil.copy2(made[0] / "host0.h5", tmp_path / d / "host0.h5")
    out = gather_ops([tmp_path / "a" / "host0.h5", tmp_path / "b" / "host0.h5"])
    assert {r[0] for r in out.rows} == {f"host0 ({tmp_path / d / 'host0.h5'})" for d in ("a", "b")}


def test_a_damaged_cached_summary_is_named(fleet):
    gather_ops(_paths(fleet))
    side = fleet / ".host1.h5.fleet.json"
    doc = json.loads(side.read_text())
    doc["sections"]["ops"]["value"] = {"rows": 2, "columns": {"op": ["x"]}}
    side.write_text(json.dumps(doc))
    out = gather_ops(_paths(fleet))
    assert list(out.failures) == [str(fleet / "host1.h5")] and "delete .host1.h5.fleet.json" in \
        out.failures[str(fleet / "host1.h5")]
    assert {r[0] for r in out.rows} == {"host0", "host2"}
