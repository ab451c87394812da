"""Hostile HDF5 captures (the generated corpus in hostile_h5.py): `info`, `analyze` and `convert`
each end in one line naming the file and the problem, exit 2, and never show a byte of a file
outside the capture."""

from __future__ import annotations

import h5py
import pytest
from accelview.app.cli.main import main
from accelview.model.store.writer import write_capture
from factories import tiny_trace
from hostile_h5 import CASES, MARKER


@pytest.fixture(scope="module")
def good_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("good") / "good.h5"
    write_capture(tiny_trace(), path)
    return path.read_bytes()


@pytest.mark.parametrize("case", list(CASES))
def test_hostile_capture(tmp_path, good_bytes, case, capsys):
    corrupt, problem, statuses = CASES[case]
    path = tmp_path / "hostile.h5"
    path.write_bytes(good_bytes)
    with h5py.File(path, "r+") as f:
        corrupt(f, tmp_path)
    out_json = tmp_path / "out.json"
    commands = (["info", str(path)], ["analyze", str(path)], ["convert", str(path), str(out_json)])
    for argv, want in zip(commands, statuses, strict=True):
        status = main(argv)
        out, err = capsys.readouterr()
        assert MARKER not in out + err, argv
        assert "Traceback" not in err
        assert status == want, (argv, err)
        if want == 2:
            assert out == "" and err.count("\n") == 1, (argv, err)
            assert err.startswith(f"accelview: {path}: ") and problem in err, (argv, err)
    if out_json.exists():
        assert MARKER not in out_json.read_text(errors="replace")
