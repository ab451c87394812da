"""The sidecar cache beside a capture: hit while the capture is unchanged, recomputed when it
changes or the sidecar is damaged, never a failure when the folder cannot be written."""

from __future__ import annotations

import json
import os

import pytest
from accelview.model.fleet.cache import cached, sidecar_path


def _counting(value):
    calls = []

    def compute():
        calls.append(1)
        return value
    return compute, calls


def test_second_call_reads_the_sidecar(tmp_path):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x" * 10)
    compute, calls = _counting({"a": (1, 2), "n": 3})
    first = cached(str(capture), "ops", compute)
    second = cached(str(capture), "ops", compute)
    assert first == second == {"a": [1, 2], "n": 3}
    assert len(calls) == 1
    assert sidecar_path(capture) == tmp_path / ".host0.h5.fleet.json"
    assert json.loads(sidecar_path(capture).read_text())["sections"]["ops"]["value"]["n"] == 3


def test_sections_are_kept_apart_and_together(tmp_path):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x")
    cached(str(capture), "ops", lambda: {"s": "ops"})
    cached(str(capture), "extract", lambda: {"s": "extract"})
    assert cached(str(capture), "ops", lambda: {"s": "recomputed"}) == {"s": "ops"}
    assert cached(str(capture), "extract", lambda: {"s": "recomputed"}) == {"s": "extract"}


def test_a_changed_capture_is_computed_again(tmp_path):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x")
    cached(str(capture), "ops", lambda: {"v": 1})
    capture.write_bytes(b"xy")
    assert cached(str(capture), "ops", lambda: {"v": 2}) == {"v": 2}
    stat = capture.stat()
    os.utime(capture, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # same size, touched
    assert cached(str(capture), "ops", lambda: {"v": 3}) == {"v": 3}


@pytest.mark.parametrize("damage", [b"{not json", b"[1, 2]", b'{"sections": 5}', b"\xff\xfe", b"[" * 100000])
def test_a_damaged_sidecar_is_recomputed_and_replaced(tmp_path, damage):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x")
    sidecar_path(capture).write_bytes(damage)
    assert cached(str(capture), "ops", lambda: {"v": 1}) == {"v": 1}
    assert cached(str(capture), "ops", lambda: {"v": 2}) == {"v": 1}


def test_a_sidecar_that_cannot_be_written_costs_the_cache_not_the_answer(tmp_path):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x")
    sidecar_path(capture).mkdir()  # in its place a folder: neither read nor replaced (as root too)
    assert cached(str(capture), "ops", lambda: {"v": 1}) == {"v": 1}
    assert cached(str(capture), "ops", lambda: {"v": 2}) == {"v": 2}
    assert sorted(p.name for p in tmp_path.iterdir()) == [".host0.h5.fleet.json", "host0.h5"]


def test_a_value_json_cannot_hold_is_the_callers_bug(tmp_path):
    capture = tmp_path / "host0.h5"
    capture.write_bytes(b"x")
    with pytest.raises(TypeError):
        cached(str(capture), "ops", lambda: {"v": object()})
    assert not sidecar_path(capture).exists()
