"""``accelview query``: CSV and JSON shapes, the readable table, and the exit statuses: 0 all
answered, 1 some captures unreadable (named on stderr, the rest printed), 2 a malformed query or
argument (one line)."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest
from accelview.app.cli.main import main


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "fleet"
    assert main(["profile", "--workload", "dp-straggler", "--param", "hosts=2", "--param", "devices=2",
                 "-o", str(out)]) == 0
    return out


@pytest.fixture
def fleet(made, tmp_path):
    dest = tmp_path / "fleet"
    shutil.copytree(made, dest)
    return dest


def _query(capsys, *args):
    code = main(["query", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_csv_by_host(fleet, capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the progress bar is drawn on a terminal only
    code, out, err = _query(capsys, fleet, "op ~ '*all_reduce*'", "--by", "host")
    assert code == 0 and err.endswith("] 2/2 captures\n")  # the captures read: the progress bar
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0]) == ["host", "class", "count", "total_ns", "mean_ns", "max_p50_ns", "max_p95_ns", "max_ns"]
    assert sorted(r["host"] for r in rows) == ["host0", "host1"]
    for r in rows:
        assert int(r["count"]) > 0 and int(r["mean_ns"]) == round(int(r["total_ns"]) / int(r["count"]))
    totals = [int(r["total_ns"]) for r in rows]
    assert totals == sorted(totals, reverse=True)


def test_json_rows_and_what_was_asked(fleet, capsys):
    code, out, _ = _query(capsys, fleet / "host0.h5", fleet / "host1.h5", "lane == 'matrix' and count >= 1",
                          "--by", "host,device,lane,op", "--format", "json")
    doc = json.loads(out)
    assert code == 0
    assert doc["by"] == ["host", "device", "lane", "op"] and doc["percentiles"] == "exact"
    assert doc["captures"] == 2 and doc["computed"] == 2 and doc["failures"] == {} and doc["partial"] is False
    assert doc["columns"] == ["host", "device", "lane", "op", "class", "count", "total_ns", "mean_ns", "p50_ns",
                              "p95_ns", "max_ns"]
    assert doc["rows"] and all(r["lane"] == "matrix" and isinstance(r["device"], int) for r in doc["rows"])
    again = json.loads(_query(capsys, fleet, "lane == 'matrix'", "--by", "host,device,lane,op",
                              "--format", "json")[1])
    assert again["computed"] == 0 and again["rows"] == doc["rows"]  # the second query: all from the cache


def test_table_for_people(fleet, capsys):
    code, out, _ = _query(capsys, fleet, "", "--by", "device", "--format", "table", "--sort", "device")
    lines = out.splitlines()
    assert code == 0 and lines[0].split()[:3] == ["device", "class", "count"]
    assert [ln.split()[0] for ln in lines[1:3]] == ["0", "1"]
    assert " ms" in lines[1] and lines[-1].startswith("note: p50/p95")


def test_an_unreadable_capture_is_named_and_the_rest_printed(fleet, capsys):
    (fleet / "host1.h5").write_text("garbage")
    code, out, err = _query(capsys, fleet, "", "--by", "host")
    named = [ln for ln in err.splitlines() if ln.startswith("accelview: ")]
    assert code == 1
    assert len(named) == 1 and "host1.h5" in named[0]
    assert [r["host"] for r in csv.DictReader(io.StringIO(out))] == ["host0"]


@pytest.mark.parametrize(("args", "words"), [
    (["op == "], "query: position 7: expected a quoted string (op is a name), found the end of the query"),
    (["op === 'x'"], "query: position 6"),
    (["", "--by", "rack"], "--by rack: group by one or more of host, device, lane, op, class"),
    (["", "--sort", "p99_ns"], "--sort p99_ns: sort by one of"),
])
def test_bad_input_is_one_line_and_exit_2(fleet, capsys, args, words):
    code, out, err = _query(capsys, fleet, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and words in err, err


def test_nothing_readable_is_exit_2(tmp_path, capsys):
    (tmp_path / "a.h5").write_text("garbage")
    code, out, err = _query(capsys, tmp_path, "")
    assert code == 2 and out == ""
    assert "a.h5" in err and "no capture of 1 could be read" in err


def test_a_cached_query_does_not_import_dask(fleet, capsys):
    assert _query(capsys, fleet, "")[0] == 0  # summarised and cached
    code = ("import sys; from accelview.app.cli.main import main; rc = main(['query', sys.argv[1], 'count > 0']); "
            "print(rc, 'dask' in sys.modules, 'distributed' in sys.modules, 'h5py' in sys.modules, file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code, str(fleet)], capture_output=True, text=True, check=False)
    assert r.stderr.split() == ["0", "False", "False", "False"], r.stderr
    assert r.stdout.startswith("host,op,class,count")
