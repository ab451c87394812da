"""``compare``: simulator pairs that differ in one thing are each named by the diff's top entry,
two seeds of one workload show no significant change, and the real A100/V100 pair diffs sensibly."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from accelview.model.analysis.report import analyze
from accelview.model.compare.diff import compare
from kineto_traces import imported, needs_traces
from sim_pairs import llm, slow_vector_spec, stepped


def test_pageable_weights_name_the_upload_and_say_why():
    d = compare(llm(), llm("pinned=false"))
    top = d.top
    assert (top.kind, top.name, top.status) == ("phase", "upload weights", "slower")
    assert top.test == "sign (matched ops)"  # the upload ran once: its copies are the samples
    assert d.summary.startswith("upload weights +")
    assert "pageable host memory" in d.summary and "of the earlier bandwidth" in d.summary
    # The diff's analyses leave out the summary tables, not the findings or phases.
    full = analyze(d.b.trace)
    assert [f.to_json() for f in d.b.report.findings] == [f.to_json() for f in full.findings]
    assert [p.breakdown_ns for p in d.b.report.phases] == [p.breakdown_ns for p in full.phases]
    assert d.b.report.stats == [] and full.stats
    finding = next(e for e in d.entries if e.kind == "finding" and e.name == "pageable-transfer")
    assert finding.status == "new" and finding.significant
    # The decode steps did not change.
    decode = next(e for e in d.entries if e.kind == "phase" and e.name == "decode #")
    assert not decode.significant and decode.a_n == decode.b_n == 6


def test_batch_16_names_the_prefill_and_its_shapes():
    d = compare(llm(), llm("batch=16"))
    assert (d.top.kind, d.top.name) == ("phase", "prefill")
    assert d.top.change_ns > 3 * d.top.a_ns and "now mostly compute (was memory)" in d.summary
    assert "m 64 → 1024" in d.summary  # 16 prompts of 64 tokens per GEMM
    decode = next(e for e in d.entries if e.kind == "phase" and e.name == "decode #")
    assert decode.significant and decode.status == "slower" and decode.test == "mann-whitney (iterations)"


def test_graphs_off_names_the_host_launches():
    d = compare(llm(), llm("graphs=false"))
    assert (d.top.kind, d.top.name, d.top.group) == ("lane", "runtime API", "decode #")
    assert "gone: launch graph decode step" in d.summary
    # The device did the same work: no op changed beyond noise.
    assert not [e for e in d.entries if e.kind == "op" and e.significant]


def test_a_slower_op_from_a_changed_device_spec(tmp_path):
    d = compare(stepped(), stepped(slow_vector_spec(tmp_path), seed=1))
    assert (d.top.kind, d.top.name) == ("phase", "step #")
    ops = [e for e in d.entries if e.kind == "op" and e.significant]
    assert [e.name for e in ops] == ["activation"]  # the GEMMs run on the matrix engines: unchanged
    assert "mostly activation" in d.summary and "vector_tflops" in d.summary
    assert ops[0].a_ci is not None and ops[0].a_ci[0] <= ops[0].a_ns <= ops[0].a_ci[1]


def test_an_inserted_op_is_new_and_the_others_stay_matched():
    d = compare(stepped(), stepped(extra_op=True))
    new = [e for e in d.entries if e.kind == "op" and e.status == "new"]
    assert [e.name for e in new] == ["inserted_scale"] and new[0].significant
    m = d.matched["step #"]
    assert len(m.pairs_a) == len(m.a_work) == 3 and len(m.b_work) == 4
    names = d.b.trace.strings
    assert [names[d.b.trace.slices.name[m.b_work[i]]] for i in m.pairs_b] == ["proj", "activation", "out"]


def test_two_seeds_of_one_workload_show_no_significant_change():
    d = compare(llm(), llm(seed=7))
    assert d.summary.startswith("no significant change")
    ops = [e for e in d.entries if e.kind == "op"]
    assert len(ops) > 20 and not any(e.significant for e in ops)
    # The rank tests had something to work with: the op times did differ a little.
    assert any(e.change_ns != 0 for e in ops)


def test_entries_are_ranked_and_json_has_the_documented_fields():
    d = compare(llm(), llm("batch=16"))
    sig = [e.significant for e in d.entries]
    assert sig == sorted(sig, reverse=True)
    tiers = {"phase": 0, "op": 0, "lane": 1, "critical-path": 2, "finding": 2}
    significant = [e for e in d.entries if e.significant]
    for x, y in itertools.pairwise(significant):
        assert (tiers[x.kind], -abs(x.change_ns)) <= (tiers[y.kind], -abs(y.change_ns))
    j = d.to_json()
    assert j["summary"] == d.summary
    e = j["entries"][0]
    for key in ("kind", "name", "a_ns", "b_ns", "change_ns", "significant", "a_ci_ns", "b_ci_ns"):
        assert key in e
    assert {x["kind"] for x in j["entries"]} <= {"op", "phase", "lane", "finding", "critical-path"}
    assert np.isclose(e["change_ns"], e["b_ns"] - e["a_ns"], atol=0.2)


@needs_traces
def test_the_a100_control_and_v100_test_traces():
    d = compare(imported("diff/control_a100_rank3.json.gz"), imported("diff/test_v100_rank1.json.gz"))
    assert (d.top.kind, d.top.name) == ("phase", "ProfilerStep#")
    assert d.top.a_n == d.top.b_n >= 5 and d.top.significant and d.top.change_ns > 0
    assert "V100" in d.summary and "A100" in d.summary
    new_kernels = [e.name for e in d.entries if e.kind == "op" and e.status == "new"]
    assert any(n.startswith("volta_") for n in new_kernels)  # the V100 runs its own GEMM kernels


@pytest.mark.parametrize("min_change", [0.0, 50.0])
def test_min_change_sets_what_counts(min_change):
    d = compare(stepped(), stepped(extra_op=True), min_change=min_change)
    small = [e for e in d.entries if e.kind == "op" and e.name == "activation"]
    assert small and not small[0].significant  # unchanged op: never significant
    step = next(e for e in d.entries if e.kind == "phase")
    assert step.significant == (abs(step.change_pct) >= min_change)
