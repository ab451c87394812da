"""Fuzzing every reader (fuzz_readers.py) within a bounded CI budget: random traces survive a
save and load and a Chrome export and import unchanged; random corruptions of real captures
and traces end in a clean one-line error or a correct load, never a crash, a hang or more
memory than the bound. Derandomized, so a failure here fails every run until it is fixed;
benchmarks/fuzz_readers.py runs the same properties longer."""

from __future__ import annotations

import pytest
from accelview.model.export.chrome import export_chrome
from accelview.model.importers import import_trace
from accelview.model.importstats import import_problems
from accelview.model.store.reader import load_capture
from accelview.model.store.writer import write_capture
from fuzz_readers import run_isolated, seeds, traces, write_corruption
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trace_compare import assert_same

CI = settings(max_examples=15, deadline=None, derandomize=True, database=None, print_blob=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                     HealthCheck.data_too_large])
CORRUPTIONS = {"hdf5": 30, "chrome": 30, "kineto": 30, "export": 25}  # examples per reader


def _without_stats(metadata: dict) -> dict:
    return {k: v for k, v in metadata.items() if k != "import_stats"}


@CI
@given(trace=traces())
def test_save_and_load_keep_a_random_trace(tmp_path_factory, trace):
    path = tmp_path_factory.mktemp("rt") / "t.h5"
    write_capture(trace, path)
    back = load_capture(path)
    assert_same(trace, back)
    assert back.metadata == trace.metadata


@CI
@given(trace=traces(), gz=st.booleans())
def test_chrome_export_and_import_keep_a_random_trace(tmp_path_factory, trace, gz):
    path = export_chrome(trace, tmp_path_factory.mktemp("rt") / ("t.json.gz" if gz else "t.json"))
    back = import_trace(path)
    assert_same(trace, back)
    assert _without_stats(back.metadata) == trace.metadata
    assert import_problems(back.metadata) == {}


@pytest.fixture(scope="module")
def real_inputs(tmp_path_factory):
    return seeds(tmp_path_factory.mktemp("seeds"))


@pytest.mark.parametrize("reader", list(CORRUPTIONS))
def test_corrupted_input_is_a_clean_error_or_a_correct_load(tmp_path_factory, real_inputs, reader):
    folder = tmp_path_factory.mktemp(reader)
    answers = []

    @settings(CI, max_examples=CORRUPTIONS[reader])
    @given(data=st.data())
    def corrupt(data):
        seed = data.draw(st.sampled_from(real_inputs[reader]))
        path = write_corruption(data.draw, reader, seed, folder)
        answer = run_isolated(path)
        answers.append(answer)
        assert answer in ("error", "load"), answer

    corrupt()
    assert "error" in answers  # the corruptions reach the readers' checks, not only harmless bytes
