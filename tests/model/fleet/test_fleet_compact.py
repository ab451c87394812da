"""The compact extract the fleet's client holds: the same values as the JSON form, fewer objects."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.model.fleet.combine import combine
from accelview.model.fleet.compact import busy_of, columns, compact, sends
from accelview.model.fleet.extract import extract_fresh, pack_int64
from fleet_tasks import write_fleet


def _extract(participations: int, send_rows: tuple[int, ...], busy: np.ndarray) -> dict:
    """A JSON-form extract (as a sidecar holds it) with ``participations`` rows and one send key
    per entry of ``send_rows`` holding that many rows."""
    rng = np.random.default_rng(participations)
    n = participations
    parts = {"lane": [3] * n, "device": [i % 2 for i in range(n)], "name": [f"ar{i % 3}" for i in range(n)],
             "op": ["all_reduce"] * n, "nbytes": [1 << 20] * n, "ranks": [4] * n,
             "arrival": (rng.random(n) * 1e9).tolist(), "end": (rng.random(n) * 1e9 + 1e9).tolist(),
             "busy": (rng.random((n, 3)) * 1e6).tolist()}
    return {"host": "host1", "path": "/x/host1.h5", "index": 1, "cluster_hosts": 4, "bounds": [0.0, 2e9],
            "devices": [{"device": 0, "compute_ns": 1.0, "communication_ns": 2.0}],
            "participations": parts,
            "sends": [["host1/device0", f"host2/device{k}", "send", 4096 + k, (rng.random((r, 2)) * 1e9).tolist()]
                      for k, r in enumerate(send_rows)],
            "host_map": {"segments": [[0, 10, 0.0, 0.0, 1.0]]}, "synced": True,
            "profile": {"times": [0.0, 2e9], "busy_ns": pack_int64(busy), "devices": 2}}


@pytest.mark.parametrize(("participations", "send_rows"), [(7, (3, 1, 5)), (0, ())])
def test_compact_keeps_every_value_and_is_idempotent(participations, send_rows):
    busy = np.cumsum(np.arange(300, dtype=np.int64) * 7)
    e = _extract(participations, send_rows, busy)
    c = compact(json.loads(json.dumps(e)))
    assert dict(columns(c)) == e["participations"]
    assert {k: v.tolist() for k, v in sends(c).items()} == {(a, b, n, z): rows for a, b, n, z, rows in e["sends"]}
    assert busy_of(c["profile"]).tolist() == busy.tolist()
    assert c["profile"]["busy_steps"].dtype.itemsize < 8  # small steps: a narrower type than int64
    assert compact(c) is c


def test_the_busy_profile_survives_steps_beyond_32_bits():
    busy = np.array([0, 1, 2**40, 2**62, 2**62 + 3], dtype=np.int64)
    c = compact(_extract(2, (1,), busy))
    assert busy_of(c["profile"]).tolist() == busy.tolist()


def test_a_damaged_profile_strip_stays_packed():
    e = _extract(2, (1,), np.arange(5))
    e["profile"]["busy_ns"] = "not base64!"
    assert compact(e)["profile"]["busy_ns"] == "not base64!"


def test_the_report_of_compact_extracts_is_the_report_of_json_ones(tmp_path):
    paths = [str(p) for p in write_fleet(tmp_path)]
    plain = {p: json.loads(json.dumps(extract_fresh(p))) for p in paths}
    packed = {p: compact(json.loads(json.dumps(e))) for p, e in plain.items()}
    assert json.dumps(combine(packed)) == json.dumps(combine(plain))
