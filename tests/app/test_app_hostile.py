"""The app opening the hostile corpus (hostile_traces.py) through model/loader: a refused file is
a one-line dialog and the view stays; a partly trusted one opens, and the Findings panel says
what the import skipped."""

from __future__ import annotations

import pytest
from hostile_traces import CASES
from timeline_widgets import shown_window

REFUSED = [name for name, c in CASES.items() if c.error is not None][::8]  # one in eight: the dialog path is one


@pytest.mark.parametrize("case", REFUSED)
def test_refused_file_is_a_one_line_dialog(qtbot, tmp_path, case):
    w = shown_window(qtbot, tmp_path)
    path = CASES[case].make(tmp_path)
    job = w.open_path(str(path))
    with qtbot.waitSignal(job.finished, timeout=20_000):
        pass
    qtbot.waitUntil(lambda: w.error_box is not None and w.error_box.isVisible(), timeout=10_000)
    text = w.error_box.text()
    assert text.startswith(str(path)) and CASES[case].error in text and "\n" not in text
    assert w.state.trace is None
    w.error_box.close()


def test_partly_trusted_file_opens_and_the_findings_panel_names_what_was_skipped(qtbot, tmp_path):
    w = shown_window(qtbot, tmp_path)
    path = CASES["numbers: ts 1e308"].make(tmp_path)
    with qtbot.waitSignal(w.findings.report_ready, timeout=20_000):
        w.open_path(str(path))
    assert len(w.state.trace.slices) > 0
    assert "import skipped 1 timestamps out of range" in w.findings.status.text()
    w.findings.grab().save(str(tmp_path / "findings.png"))
