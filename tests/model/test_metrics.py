"""Counter taxonomy: the safe expression parser, units, the shipped definitions, evaluation."""

from __future__ import annotations

import json

import numpy as np
import pytest
from accelview.app.cli.main import main
from accelview.model import TraceBuilder
from accelview.model.analysis.link import bulk_bandwidth
from accelview.model.analysis.metrics.counters import arg_values, window_mean, window_sum
from accelview.model.analysis.metrics.expr import ExprError, evaluate, parse
from accelview.model.analysis.metrics.taxonomy import MetricRegistry, device_constants
from accelview.model.analysis.metrics.units import Unit, UnitError
from factories import tiny_trace

SPEC = {"compute": {"clock_mhz": 1000, "matrix_tflops": {"bf16": 1000.0}}, "memory": {"hbm_gb_per_s": 4000.0},
        "pcie": {"gen": 4, "lanes": 16, "mps": 256}, "host": {"queue_depth": 512}}


def _defs(metrics, counters=({"name": "a", "unit": "B"}, {"name": "t", "unit": "ns"})):
    base = [dict(c, block="x", description="", scope="op", kind="delta") for c in counters]
    return {"base_counters": base, "constants": [], "metrics": [dict(m, group="g", description="") for m in metrics]}


@pytest.mark.parametrize("text", ["a +", "(a", "a $ b", "__import__('os')", "min(a)", "foo(a)", "a b", ""])
def test_parser_rejects_bad_expressions(text):
    with pytest.raises(ExprError):
        parse(text)


def test_evaluation_is_vectorised_with_precedence_and_nan_for_zero_division():
    env = {"x": (np.array([1.0, 2.0, 3.0]), Unit()), "y": (np.array([1.0, 0.0, 2.0]), Unit())}
    v, _ = evaluate(parse("-x + x * 2 / y - max(x, 2)"), env.__getitem__)
    assert np.allclose(v[[0, 2]], [-1 + 2 - 2, -3 + 3 - 3]) and np.isnan(v[1])


def test_units_parse_and_combine():
    assert Unit.parse("GB/s").scale == 1e9
    assert Unit.parse("B") / Unit.parse("s") == Unit.parse("B/s")
    assert Unit.parse("%").scale == 0.01 and Unit.parse("%").same_dimension(Unit.parse("1"))
    with pytest.raises(UnitError):
        Unit.parse("furlongs")


def test_registry_rejects_unknown_names_unit_mismatches_and_cycles():
    with pytest.raises(ExprError, match="unknown name 'b'"):
        MetricRegistry(_defs([{"name": "m", "expr": "a + b", "unit": "B"}]))
    with pytest.raises(ExprError, match="unit mismatch"):
        MetricRegistry(_defs([{"name": "m", "expr": "a + t", "unit": "B"}]))
    with pytest.raises(ExprError, match="declared in GB/s"):
        MetricRegistry(_defs([{"name": "m", "expr": "a", "unit": "GB/s"}]))
    with pytest.raises(ExprError, match="depends on itself"):
        MetricRegistry(_defs([{"name": "m", "expr": "n", "unit": "B"}, {"name": "n", "expr": "m", "unit": "B"}]))


def test_shipped_metrics_evaluate_against_a_device_spec():
    reg = MetricRegistry.load()
    c = device_constants(reg, SPEC)
    assert c["hbm_peak"] == 4e12 and c["peak_flops_bf16"] == 1e15 and c["clock_hz"] == 1e9
    assert c["pcie_peak_h2d"] == pytest.approx(26.4e9, rel=0.01)  # REFERENCE.md: Gen4 x16 MPS 256 read
    util = reg.evaluate("hbm_utilization", {"hbm_read_bytes": np.array([2e9, 4e9]), "hbm_write_bytes": 0.0},
                        np.array([1e-3, 1e-3]), c)
    assert np.allclose(util, [50.0, 100.0])
    assert reg.evaluate("ridge_point", {}, 1.0, c) == pytest.approx(250.0)
    assert reg.inputs_of("arithmetic_intensity") == {"flops", "hbm_read_bytes", "hbm_write_bytes"}
    with pytest.raises(ExprError, match="needs counter 'flops'"):
        reg.evaluate("compute_utilization", {}, 1.0, c)


def test_pcie_bulk_bandwidth_matches_published_table():
    assert bulk_bandwidth(4, 16, 256, "d2h") == pytest.approx(26.0e9, rel=0.005)
    assert bulk_bandwidth(5, 16, 256, "d2h") == pytest.approx(52.0e9, rel=0.005)
    assert bulk_bandwidth(5, 16, 512, "h2d") == pytest.approx(55.2e9, rel=0.005)
    assert bulk_bandwidth(4, 8, 256, "d2h") == pytest.approx(13.0e9, rel=0.005)


def test_op_counters_come_from_slice_args():
    t = tiny_trace()
    ids = np.arange(len(t.slices))
    flops = arg_values(t, "flops", ids)
    names = [t.strings[n] for n in t.slices.name]
    assert flops[names.index("gemm")] == 2.5e12
    assert np.isnan(flops[names.index("launch")])
    assert np.isnan(arg_values(t, "nope", ids)).all()


def test_window_sum_and_mean_of_sampled_counters():
    b = TraceBuilder()
    tr = b.add_counter_track("hbm_read_bytes", "B", "HBM")
    b.add_counters(tr, np.array([100, 200, 300, 400]), np.array([10.0, 20.0, 30.0, 40.0]))
    t = b.build()
    assert window_sum(t, tr, 100, 400) == pytest.approx(20 + 30 + 40)
    assert window_sum(t, tr, 150, 250) == pytest.approx(10 + 15)
    assert window_mean(t, tr, 100, 300) == pytest.approx(15.0)


def test_metrics_command_lists_and_checks_definitions(tmp_path, capsys):
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert "hbm_utilization" in out and "Base counters" in out and "pcie_peak_h2d" in out
    bad = tmp_path / "m.json"
    bad.write_text(json.dumps(_defs([{"name": "m", "expr": "a + t", "unit": "B"}])))
    assert main(["metrics", "--definitions", str(bad)]) == 2
    assert "unit mismatch" in capsys.readouterr().err
