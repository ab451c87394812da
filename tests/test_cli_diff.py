"""``accelview diff A B``: text and JSON, --min-change, and one-line errors (exit 2) for bad input."""

from __future__ import annotations

import json

import pytest
from accelview.app.cli.main import main
from accelview.model.store.writer import write_capture
from sim_pairs import stepped


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    d = tmp_path_factory.mktemp("pair")
    a, b = d / "a.h5", d / "b.h5"
    write_capture(stepped(), a)
    write_capture(stepped(extra_op=True), b)
    return a, b


def test_text_starts_with_the_one_line_answer(pair, capsys):
    assert main(["diff", str(pair[0]), str(pair[1])]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("step # +") and "inserted_scale" in "\n".join(out)
    assert any(line.lstrip().startswith("* op") and "inserted_scale" in line and "new" in line for line in out)


def test_json_lists_significant_entries_first(pair, capsys):
    assert main(["diff", str(pair[0]), str(pair[1]), "--json"]) == 0

    def not_json(constant: str) -> None:
        raise AssertionError(f"{constant} is not JSON")

    j = json.loads(capsys.readouterr().out, parse_constant=not_json)
    assert j["summary"].startswith("step # +")
    kinds = [e["kind"] for e in j["entries"]]
    assert kinds[0] == "phase" and "op" in kinds
    flags = [e["significant"] for e in j["entries"]]
    assert flags == sorted(flags, reverse=True)
    assert j["iterations"]["step #"] == [6, 6]


def test_min_change_makes_small_changes_not_significant(pair, capsys):
    main(["diff", str(pair[0]), str(pair[0]), "--json", "--min-change", "0"])
    same = json.loads(capsys.readouterr().out)
    assert same["summary"].startswith("no significant change")
    assert same["entries"] and not any(e["significant"] for e in same["entries"])
    main(["diff", str(pair[0]), str(pair[1]), "--json"])
    every = json.loads(capsys.readouterr().out)["entries"]
    main(["diff", str(pair[0]), str(pair[1]), "--json", "--min-change", "1000"])
    big = json.loads(capsys.readouterr().out)["entries"]
    assert len(big) == len(every)  # nothing filtered out: only what counts as significant changes
    assert {e["status"] for e in big if e["significant"]} == {"new"}  # only the inserted op is left
    assert sum(e["significant"] for e in big) < sum(e["significant"] for e in every)


def test_every_entry_is_reachable(pair, capsys):
    """JSON has every entry, whatever --top; the text lists --top rows, then says how many more."""
    main(["diff", str(pair[0]), str(pair[1]), "--json", "--top", "1"])
    j = json.loads(capsys.readouterr().out)
    keys = {"kind", "name", "a_ns", "b_ns", "change_ns", "significant", "a_ci_ns", "b_ci_ns"}
    assert len(j["entries"]) > 3 and all(keys <= set(e) for e in j["entries"])
    flags = [e["significant"] for e in j["entries"]]
    assert flags == sorted(flags, reverse=True) and not all(flags)
    main(["diff", str(pair[0]), str(pair[1]), "--top", "2"])
    out = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(out) if line.startswith("Changes per iteration"))
    assert f"of {len(j['entries'])};" in out[header]
    rows = [line for line in out[header + 2:] if line.startswith(("  * ", "  ~ "))]
    assert len(rows) == 2
    assert out[header + 4] == f"  … {len(j['entries']) - 2} more (--top to see them, --json for all)"
    main(["diff", str(pair[0]), str(pair[1]), "--top", str(len(j["entries"]))])
    out = capsys.readouterr().out
    assert "more (--top" not in out and sum(line.startswith(("  * ", "  ~ ")) for line in out.splitlines()) \
        == len(j["entries"])


@pytest.mark.parametrize("args, says", [
    (["missing.h5", "{a}"], "missing.h5: no such file"),
    (["{a}", "{dir}"], "a folder with no host captures (*.h5) and no PyTorch (Kineto) traces"),
    (["{a}", "{a}", "--min-change", "-1"], "--min-change must be a percentage"),
    (["{a}", "{a}", "--top", "0"], "--top must be at least 1"),
])
def test_bad_input_is_one_line_and_exit_2(pair, tmp_path, capsys, args, says):
    argv = [x.format(a=pair[0], dir=tmp_path) for x in args]
    assert main(["diff", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and says in err
