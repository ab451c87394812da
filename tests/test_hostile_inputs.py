"""The generated corpus of hostile inputs for the readers of several files (hostile_inputs.py):
a cluster's folder through info, analyze, render and convert, merge, and diff. Each case ends in
its one line, naming the file, with exit status 2 and no traceback (``analyze`` of a folder: the
rest of the fleet answered, marked partial, exit status 1); nothing is written."""

from __future__ import annotations

import pytest
from accelview.app.cli.main import main
from hostile_inputs import CASES, FOLDER_CASES, FOLDER_COMMANDS, Hosts


@pytest.fixture(scope="module")
def hosts(tmp_path_factory) -> Hosts:
    return Hosts(tmp_path_factory.mktemp("hosts"))


def _one_line(argv, named, error, capsys, status):
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if argv[0] == "analyze" and status == 1:  # a fleet's answer without that host, marked partial
        assert "PARTIAL: 1 failed" in out and str(named) in out, (argv, out)
    else:
        assert status == 2 and out == "", (argv, err)
    assert err.startswith(f"accelview: {named}: ") and error in err and err.count("\n") == 1, (argv, err)


# each folder through `info` and one of the other commands in turn (they share load_input)
FOLDER_RUNS = [(case, command) for i, case in enumerate(FOLDER_CASES)
               for command in (FOLDER_COMMANDS[0], FOLDER_COMMANDS[1 + i % (len(FOLDER_COMMANDS) - 1)])]


@pytest.mark.parametrize(("case", "command"), FOLDER_RUNS)
def test_hostile_cluster_folder(hosts, tmp_path, case, command, capsys):
    make, error = FOLDER_CASES[case]
    argv, named = make(hosts, tmp_path, command)
    _one_line(argv, named, error, capsys, main(argv))
    assert not (tmp_path / "out.h5").exists() and not (tmp_path / "shot.png").exists()


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_merge_and_diff(hosts, tmp_path, case, capsys):
    argv, named = CASES[case].make(hosts, tmp_path)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.h5") if p.is_file()}
    _one_line(argv, named, CASES[case].error, capsys, main(argv))
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.h5") if p.is_file()} == before  # nothing written


@pytest.mark.parametrize("case", ["the same host twice", "a truncated host capture"])
def test_the_app_opens_a_hostile_cluster_folder_as_a_one_line_dialog(qtbot, hosts, tmp_path, case):
    from timeline_widgets import shown_window

    make, error = FOLDER_CASES[case]
    argv, named = make(hosts, tmp_path, "info")
    w = shown_window(qtbot, tmp_path)
    job = w.open_paths([argv[1]])
    with qtbot.waitSignal(job.finished, timeout=20_000):
        pass
    qtbot.waitUntil(lambda: w.error_box is not None and w.error_box.isVisible(), timeout=10_000)
    text = w.error_box.text()
    assert text.startswith(f"{named}: ") and error in text and "\n" not in text and w.state.trace is None
    w.error_box.close()
