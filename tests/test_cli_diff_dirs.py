"""``accelview diff DIR_A DIR_B``: two runs' hosts (host captures) or ranks (Kineto traces)
compared member by member; the straggler that appeared is the top entry, not the hosts that
wait for it; the same workload twice is no significant change; bad folders are one line, exit 2."""

from __future__ import annotations

import json

import pytest
from accelview.app.cli.main import main
from accelview.capture.sim import workloads
from accelview.model.store.writer import write_capture
from sim_pairs import stepped

SMALL = {"hosts": 2, "devices": 2, "steps": 6}
KINETO_RANKS = "kineto/a100_128rank_sampled"  # two ranks of one NCCL job: the only multi-rank run there


def _cluster(folder, seed=0, **params):
    """dp-straggler on 2 hosts × 2 devices written as one capture per host into ``folder``."""
    cluster = workloads.run_cluster("dp-straggler", {**SMALL, **params}, seed=seed)
    folder.mkdir()
    for h, trace in enumerate(cluster.traces()):
        write_capture(trace, folder / f"host{h}.h5")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Runs without a straggler (two seeds), with host1 late by its compute or by its host thread,
    and with host0 late by its compute instead."""
    d = tmp_path_factory.mktemp("runs")
    return {"base": _cluster(d / "base", delay_us=0.0), "again": _cluster(d / "again", seed=7, delay_us=0.0),
            "compute": _cluster(d / "compute", slow_device=-1),
            "host": _cluster(d / "host", slow_device=-1, cause="host"),
            "moved": _cluster(d / "moved", slow_device=-1, slow_host=0)}


def _diff(capsys, *argv):
    assert main(["diff", *map(str, argv), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("cause", ["compute", "host"])
def test_the_top_entry_names_the_slow_host(runs, capsys, cause):
    j = _diff(capsys, runs["base"], runs[cause])
    top = j["entries"][0]
    assert top["host"] == "host1" and top["significant"], top
    assert j["summary"].startswith("host1 changed most")
    assert set(j["hosts"]) == {"host0", "host1"} and j["hosts"]["host1"]["iterations"]["step #"] == [6, 6]
    # host0 waited for host1: its all-reduce grew, but by waiting, which ranks it below host1's own change
    waited = next(e for e in j["entries"] if e["host"] == "host0" and e["name"] == "gradients all_reduce")
    assert waited["significant"] and abs(waited["own_change_ns"]) < waited["change_ns"] / 4
    whole = [e for e in j["entries"] if e["host"] is None]
    assert whole and all(e["kind"] == "op" for e in whole)
    # the hosts read together: a straggler appeared, and it is host1
    straggler = next(e for e in j["entries"] if e["kind"] == "finding" and e["name"] == "straggler")
    assert straggler["host"] == "host1" and straggler["status"] == "new" and straggler["across_hosts"]
    assert "now a straggler" in j["summary"]


def test_the_documented_schema_with_the_host_of_each_entry(runs, capsys):
    j = _diff(capsys, runs["base"], runs["compute"])
    for e in j["entries"]:
        assert {"kind", "name", "a_ns", "b_ns", "change_ns", "significant", "a_ci_ns", "b_ci_ns", "host"} <= set(e)
        assert e["kind"] in ("op", "phase", "lane", "finding", "critical-path")
    new = next(e for e in j["entries"] if e["name"] == "extra work" and e["host"] == "host1")
    assert new["status"] == "new" and new["a_ns"] == 0 and new["b_ns"] > 0
    flags = [e["significant"] for e in j["entries"]]
    assert flags == sorted(flags, reverse=True)


def test_the_same_workload_twice_is_no_significant_change(runs, capsys):
    j = _diff(capsys, runs["base"], runs["again"])
    assert j["summary"].startswith("no significant change on any of the 2 hosts")
    assert j["entries"] and not any(e["significant"] for e in j["entries"])  # every entry, each a "~"


def test_a_straggler_that_moved_is_told_as_moved(runs, capsys):
    j = _diff(capsys, runs["compute"], runs["moved"])
    assert "the straggler moved from host host1 to host host0" in j["summary"], j["summary"]
    assert "no more straggler" not in j["summary"] and "now a straggler" not in j["summary"]
    found = {(e["host"], e["status"]) for e in j["entries"] if e["kind"] == "finding" and e.get("across_hosts")}
    assert found == {("host1", "missing"), ("host0", "new")}
    gone = _diff(capsys, runs["compute"], runs["base"])["summary"]
    assert "no more straggler (was host host1)" in gone, gone


def test_every_entry_is_reachable(runs, capsys):
    """JSON has every entry whatever --top, significant first by |own change|; the text lists
    --top rows, then how many more."""
    j = _diff(capsys, runs["compute"], runs["moved"], "--top", "1")
    sig = [e for e in j["entries"] if e["significant"]]
    assert 0 < len(sig) < len(j["entries"]) and j["entries"][:len(sig)] == sig
    assert main(["diff", str(runs["compute"]), str(runs["moved"]), "--top", "3"]) == 0
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("Changes per iteration"))
    assert f"{len(sig)} significant of {len(j['entries'])};" in out[header]
    assert [line[2] for line in out[header + 2:header + 5]] == ["*"] * 3
    assert out[header + 5] == f"  … {len(j['entries']) - 3} more (--top to see them, --json for all)"


def test_files_per_side_and_text(runs, capsys):
    a, b = runs["base"], runs["compute"]
    assert main(["diff", "--a", str(a / "host0.h5"), str(a / "host1.h5"), "--b", str(b / "host1.h5"),
                 str(b / "host0.h5")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("host1 changed most: extra work")
    row = next(line for line in out if line.lstrip().startswith("*"))
    assert row.split()[1:4] == ["op", "host1", "extra"]


def test_a_host_on_one_side_only_is_new(runs, tmp_path, capsys):
    three = _cluster(tmp_path / "three", hosts=3, delay_us=0.0)
    j = _diff(capsys, runs["base"], three)
    assert j["new"] == ["host2"] and j["summary"].startswith("host2 new")
    assert any(e["host"] == "host2" and e["status"] == "new" and e["kind"] == "phase" for e in j["entries"])
    assert "A is a run of 2 hosts, B of 3" in j["notes"]


def test_the_two_ranks_of_a_kineto_run_twice_is_no_significant_change(shared_traces, capsys):
    ranks = shared_traces / KINETO_RANKS
    j = _diff(capsys, ranks, ranks)
    assert j["summary"].startswith("no significant change on any of the 2 ranks")
    assert set(j["ranks"]) == {"rank 0", "rank 1"} and j["ranks"]["rank 1"]["iterations"]["ProfilerStep#"] == [2, 2]
    j = _diff(capsys, ranks, ranks / "rank-0.json.gz")
    assert j["missing"] == ["rank 1"] and j["summary"].startswith("rank 1 missing")
    assert {e["rank"] for e in j["entries"] if e["status"] == "missing"} == {1}


@pytest.mark.parametrize("args, says", [
    (["{base}", "{empty}"], "a folder with no host captures (*.h5) and no PyTorch (Kineto) traces"),
    (["{base}", "{ranks}"], "PyTorch (Kineto) rank traces, but {base} (2 hosts) holds host captures"),
    (["{base}", "{mixed}"], "a folder with both host captures (host0.h5) and PyTorch (Kineto) traces"),
    (["{base}", "{plain}"], "neither a host capture of a cluster nor a PyTorch (Kineto) rank trace"),
    (["--a", "{ranks}/rank-0.json.gz", "--b", "{ranks}/rank-1.json.gz"], "the runs share no rank"),
    (["--a", "{base}/host0.h5", "{base}/host0.h5", "--b", "{base}"], "host0 twice"),
    (["--a", "{base}/host0.h5", "--b", "{base}"], "a cluster of 2 hosts, but host1 is missing"),
    (["{base}", "{base}", "--a", "{base}"], "either as A B or with --a FILE… --b FILE…"),
])
def test_bad_folders_are_one_line_and_exit_2(runs, shared_traces, tmp_path, capsys, args, says):
    (tmp_path / "empty").mkdir()
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "host0.h5").symlink_to(runs["base"] / "host0.h5")
    (mixed / "rank-0.json.gz").symlink_to(shared_traces / KINETO_RANKS / "rank-0.json.gz")
    (tmp_path / "plain").mkdir()
    write_capture(stepped(), tmp_path / "plain" / "run.h5")
    names = {"base": runs["base"], "ranks": shared_traces / KINETO_RANKS, "empty": tmp_path / "empty",
             "mixed": mixed, "plain": tmp_path / "plain"}
    assert main(["diff", *(x.format(**names) for x in args)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says.format(**names) in err, err
