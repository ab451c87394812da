"""The analysis made in a forked helper (``accelview diff`` analyses its two runs at once) is the
one made in-process: its report crosses as plain JSON and numpy columns."""

from __future__ import annotations

import json
import os
import time

import numpy as np
import pytest
from accelview.model.analysis import forked, helper
from accelview.model.analysis.report import Report, analyze
from accelview.model.analysis.roles import Roles
from accelview.model.compare.diff import compare
from accelview.model.forking import reap

from tests.sim_pairs import llm


def _same(r: Report, s: Report) -> None:
    assert json.dumps(s.to_json(), sort_keys=True) == json.dumps(r.to_json(), sort_keys=True)
    assert [f.slices for f in s.findings] == [f.slices for f in r.findings]
    assert (s.ops.family == r.ops.family).all() and (s.ops.code == r.ops.code).all()
    assert r.critical_path is not None and s.critical_path is not None
    assert s.critical_path.steps == r.critical_path.steps


@pytest.mark.parametrize("tables", [True, False])
def test_a_report_and_its_roles_survive_their_plain_encoding(tables: bool) -> None:
    t = llm("pinned=0")
    roles = Roles(t)
    r = analyze(t, roles, tables=tables)
    assert r.findings and len(r.ops.slice) and len(r.gaps)
    back, roles_back = forked.decode(t, forked.pack(r, roles))
    _same(r, back)
    assert set(vars(roles_back)) == {"trace", "device_ops", "copies", "blocking_calls", "chain"}
    for key in ("device_ops", "blocking_calls", "ops_order"):
        assert (getattr(roles_back, key) == getattr(roles, key)).all()
    for x, y in zip(roles_back.chain, roles.chain, strict=True):
        assert (x == y).all()


def test_the_helper_reports_what_this_process_would() -> None:
    t = llm()
    helper = forked.start(t, tables=False, min_slices=0)
    if helper is None:
        pytest.skip("forking a helper is not safe here")
    result = helper.result()
    assert result is not None
    _same(analyze(t, tables=False), result[0])
    assert (result[1].blocking_calls == Roles(t).blocking_calls).all()


def test_a_helper_that_fails_gives_no_report(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: object, **__: object) -> Report:
        raise RuntimeError("analysis failed")

    monkeypatch.setattr(forked, "analyze", broken)
    helper = forked.start(llm(), min_slices=0)
    if helper is None:
        pytest.skip("forking a helper is not safe here")
    assert helper.result() is None


def test_a_diff_with_the_helper_is_the_diff_without(monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = llm(), llm(seed=1)
    alone = compare(a, b, report_a=analyze(a, tables=False), report_b=analyze(b, tables=False)).to_json()
    monkeypatch.setattr(helper, "MIN_SLICES", 0)
    started, real = [], forked.ForkedAnalysis
    monkeypatch.setattr(forked, "ForkedAnalysis", lambda *args: started.append(1) or real(*args))
    assert compare(a, b).to_json() == alone
    assert started or not helper.fork_safe()
    assert alone["entries"]


def test_the_critical_path_walked_in_a_helper_is_the_one_walked_here(monkeypatch: pytest.MonkeyPatch) -> None:
    t = llm("pinned=0")
    here = analyze(t)
    monkeypatch.setattr(helper, "MIN_SLICES", 0)
    started, real = [], helper.Helper
    monkeypatch.setattr(helper, "Helper", lambda work: started.append(1) or real(work))
    beside = analyze(t)
    assert started or not helper.fork_safe()
    _same(here, beside)


def test_a_helper_no_longer_wanted_is_stopped_and_the_next_one_starts() -> None:
    slow = helper.start(lambda: time.sleep(60) or ({}, {}), 1, min_slices=0)
    if slow is None:
        pytest.skip("forking a helper is not safe here")
    slow.cancel()
    reap(block=True)  # returns once the stopped helper is gone (it would sleep a minute)
    with pytest.raises(ChildProcessError):
        os.waitpid(slow.pid, os.WNOHANG)
    quick = helper.start(lambda: ({"ok": 1}, {"x": np.arange(3)}), 1, min_slices=0)
    assert quick is not None
    result = quick.result()
    assert result is not None
    assert result[0] == {"ok": 1} and result[1]["x"].tolist() == [0, 1, 2]


def test_the_fork_tests_run_in_a_fresh_process_when_this_one_has_threads() -> None:
    """Earlier tests leave threads running (Qt, Dask), so the helper tests above skip inside the
    whole suite; run them again in a process of their own, where forking is safe, and none skip."""
    import subprocess
    import sys
    from pathlib import Path

    from accelview.model.forking import fork_safe

    if fork_safe() or os.environ.get("ACCELVIEW_FORK_TESTS"):
        pytest.skip("forking is safe in this process: the tests above ran their helpers here")
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: the analysis never forks a helper")
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", __file__],
                         cwd=root, env={**os.environ, "ACCELVIEW_FORK_TESTS": "1"},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:]
    assert "forking a helper is not safe here" not in run.stdout, run.stdout[-3000:]
