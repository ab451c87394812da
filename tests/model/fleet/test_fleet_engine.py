"""The fleet engine: one task per capture path, in this process or on a 2-worker LocalCluster,
with the same results; a killed worker, an unreadable capture and a hung task each reported by
name in one line while the rest of the answer comes back."""

from __future__ import annotations

import pytest
from accelview.model.fleet.engine import WORKER_DIED, close_client, map_captures, open_client
from fleet_tasks import probe


@pytest.fixture(scope="module")
def client():
    c = open_client(workers=2)
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
    assert len({r["pid"] for r in there.results.values()} - {r["pid"] for r in here.results.values()}) >= 1


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
    out = map_captures(probe, paths, client=client, timeout_s=3, progress=lambda d, t: seen.append(d))
    assert out.failures == {paths[1]: "timed out after 3 s"}
    assert sorted(out.results) == [paths[0], paths[2]]
    assert seen[-1] == 3
