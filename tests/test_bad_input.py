"""Bad input gets one clear line naming the file and the problem: CaptureError from the API,
exit status 2 and no traceback from the CLI."""

from __future__ import annotations

import h5py
import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.model import CaptureError
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from factories import tiny_trace


@pytest.fixture
def good(tmp_path):
    path = tmp_path / "good.h5"
    write_capture(tiny_trace(), path)
    return path


def _tamper(path, fn):
    with h5py.File(path, "r+") as f:
        fn(f)
    return path


def _replace(f, name, data):
    del f[name]
    f.create_dataset(name, data=data)


def _text_file(tmp_path):
    p = tmp_path / "notes.h5"
    p.write_text("this is not a capture\n")
    return p


def _empty_file(tmp_path):
    p = tmp_path / "empty.h5"
    p.write_bytes(b"")
    return p


def _truncated(tmp_path, good):
    p = tmp_path / "truncated.h5"
    p.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    return p


def _other_program(tmp_path):
    p = tmp_path / "other.h5"
    with h5py.File(p, "w") as f:
        f.create_dataset("images", data=np.zeros((4, 4)))
    return p


def _start_goes_backwards(f):
    """Make the second slice of a (track, depth) run start before the first one."""
    begin, end = f["slices/runs/begin"][()], f["slices/runs/end"][()]
    row = int(begin[np.flatnonzero(end - begin >= 2)[0]]) + 1
    deltas = f["slices/start_ns"][()].astype("i8")  # stored as row-to-row differences
    deltas[row] = -1_000_000
    _replace(f, "slices/start_ns", deltas)


CASES = {
    "not HDF5": (lambda tmp, good: _text_file(tmp), "not an HDF5 capture"),
    "empty": (lambda tmp, good: _empty_file(tmp), "the file is empty"),
    "truncated": (_truncated, "truncated"),
    "another program": (lambda tmp, good: _other_program(tmp), "another program"),
    "newer version": (lambda tmp, good: _tamper(good, lambda f: f.attrs.__setitem__("format_version", 99)),
                      "format version 99, newer than this accelview reads"),
    "older version": (lambda tmp, good: _tamper(good, lambda f: f.attrs.__setitem__("format_version", 1)),
                      "format version 1, written by a pre-release accelview"),
    "missing dataset": (lambda tmp, good: _tamper(good, lambda f: f.__delitem__("slices/dur_ns")),
                        "missing dataset /slices/dur_ns"),
    "mistyped dataset": (lambda tmp, good: _tamper(good, lambda f: _replace(
        f, "slices/dur_ns", f["slices/dur_ns"][()].astype("f8"))), "/slices/dur_ns has type float64"),
    "slices out of order": (lambda tmp, good: _tamper(good, _start_goes_backwards), "out of order"),
    "flow to a missing slice": (lambda tmp, good: _tamper(good, lambda f: _replace(
        f, "flows/dst", np.array([0, 1, 10_000]))), "ends at a slice that does not exist"),
    "negative duration": (lambda tmp, good: _tamper(good, lambda f: _replace(
        f, "slices/dur_ns", -f["slices/dur_ns"][()])), "negative duration"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_api_raises_capture_error_naming_file_and_problem(tmp_path, good, case):
    make, problem = CASES[case]
    path = make(tmp_path, good)
    with pytest.raises(CaptureError) as err:
        load_capture(path)
    msg = str(err.value)
    assert msg.startswith(str(path) + ": ")
    assert problem in msg
    assert "\n" not in msg


@pytest.mark.parametrize("case", list(CASES))
def test_cli_prints_one_line_and_exits_2(tmp_path, good, case, capsys):
    make, problem = CASES[case]
    path = make(tmp_path, good)
    assert main(["info", str(path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1 and problem in err and str(path) in err
    assert "Traceback" not in err


def test_cli_missing_file_and_nonsense_arguments(tmp_path, capsys):
    assert main(["info", str(tmp_path / "nope.h5")]) == 2
    assert "nope.h5: no such file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main(["info", "--frobnicate", "x.h5"])
    assert e.value.code == 2
