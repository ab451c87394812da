"""The "Profile script…" dialog: runs a script under capture off the GUI thread; cancel keeps the capture."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from accelview.app.profile_dialog import ProfileDialog
from accelview.model import TrackKind
from accelview.model.store.reader import load_capture
from PySide6.QtCore import QObject, Slot

SCRIPT = """\
import sys
from accelview.capture import sim
dev = sim.device(0)
n = int(sys.argv[1])
i = 0
while n < 0 or i < n:
    dev.launch("elementwise", elements=4096)
    i += 1
dev.synchronize()
"""


@pytest.fixture
def stop_after():
    """Dialogs to stop at the end of a test, even a failed one (their scripts may loop forever)."""
    dialogs: list[ProfileDialog] = []
    yield dialogs.append
    for d in dialogs:
        d.cancel()
        d.wait()


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "loop.py"
    path.write_text(SCRIPT)
    return path


def test_profiling_a_script_emits_the_capture_path(qtbot, script, tmp_path) -> None:
    out = tmp_path / "dialog.h5"
    dialog = ProfileDialog(script=str(script), output=str(out))
    qtbot.addWidget(dialog)
    dialog.args.setText("50")
    dialog.call_sites.setChecked(True)
    with qtbot.waitSignal(dialog.captured, timeout=30_000) as blocker:
        dialog.start()
        assert dialog.running and not dialog.start_button.isEnabled()
    assert blocker.args == [str(out)]
    dialog.wait()
    assert dialog.result.complete and dialog.result.exit_code == 0
    trace = load_capture(out)
    assert trace.complete
    assert "complete" in dialog.status.text() and dialog.start_button.isEnabled()
    api = trace.tracks.kind[trace.slices.track] == TrackKind.RUNTIME_API
    launches = [i for i in np.flatnonzero(api) if trace.strings[int(trace.slices.name[i])] == "launch elementwise"]
    assert len(launches) == 50  # the box asked for call sites: each launch points at the script's line
    assert {trace.args(int(trace.slices.args[i]))["site"] for i in launches} == {f"{script}:7"}


def test_cancel_stops_the_script_and_keeps_the_capture(qtbot, script, tmp_path, stop_after) -> None:
    out = tmp_path / "cancelled.h5"
    dialog = ProfileDialog(script=str(script), output=str(out))
    qtbot.addWidget(dialog)
    stop_after(dialog)
    dialog.args.setText("-1")  # runs until stopped
    events: list[int] = []
    dialog.start()
    dialog._worker.progressed.connect(lambda p: events.append(p.events))
    qtbot.waitUntil(lambda: bool(events) and events[-1] > 0, timeout=30_000)
    with qtbot.waitSignal(dialog.captured, timeout=30_000):
        dialog.cancel_button.click()
    dialog.wait()
    trace = load_capture(out)
    assert not trace.complete and trace.incomplete_reason == "cancelled"
    assert len(trace.slices) > 0


def test_stop_while_converting_stops_the_conversion_and_the_bar_shows_how_far_it_is(
        qtbot, script, tmp_path, monkeypatch) -> None:
    import accelview.capture.service.runner as service

    monkeypatch.setattr(service, "REPORT_S", 0.0)  # a progress report after every chunk converted
    monkeypatch.setattr(service.Spool, "CHUNK", 4096)
    chunks = service.Spool.chunks
    clicked = threading.Event()

    def until_stopped(self):  # past half way the conversion waits for the dialog's Stop
        for chunk in chunks(self):
            if self.read > self.size // 2:
                clicked.wait(30)
            yield chunk

    monkeypatch.setattr(service.Spool, "chunks", until_stopped)
    out = tmp_path / "half.h5"
    dialog = ProfileDialog(script=str(script), output=str(out))
    qtbot.addWidget(dialog)
    dialog.args.setText("3000")
    seen: list[tuple[str, int, int]] = []

    def watch(p) -> None:  # runs after the dialog's own slot: the bar as it was just set
        seen.append((p.phase, dialog.bar.maximum(), dialog.bar.value()))
        if p.phase == "converting" and dialog.bar.value() >= 30 and not clicked.is_set():
            dialog.cancel_button.click()
            clicked.set()

    class Watcher(QObject):  # lives in the GUI thread: its slot is queued after the dialog's (a bare
        # function would run in the worker's thread, racing the dialog for the bar)
        @Slot(object)
        def see(self, p) -> None:
            watch(p)

    watcher = Watcher()
    dialog.start()
    dialog._worker.progressed.connect(watcher.see)
    with qtbot.waitSignal(dialog.captured, timeout=60_000):
        pass
    dialog.wait()
    recording = [m for phase, m, _ in seen if phase == "recording"]
    converting = [(m, v) for phase, m, v in seen if phase == "converting"]
    assert recording and set(recording) == {0}  # busy while the script runs: its length is unknown
    assert converting and {m for m, _ in converting} == {100}
    values = [v for _, v in converting]
    assert values == sorted(values) and 30 <= values[-1] < 100
    assert dialog.result.reason.startswith("cancelled while converting")
    trace = load_capture(out)  # what was converted (the CLI's tests count it)
    assert not trace.complete and trace.incomplete_reason == dialog.result.reason


def test_a_missing_script_is_reported_in_the_dialog(qtbot, tmp_path) -> None:
    dialog = ProfileDialog(script=str(tmp_path / "nope.py"), output=str(tmp_path / "x.h5"))
    qtbot.addWidget(dialog)
    dialog.start()
    assert "no such file" in dialog.status.text() and not dialog.running


LOUD = """\
import os, sys
from accelview.capture import sim
dev = sim.device(0)
dev.launch("elementwise", elements=4096)
line = "x" * 99 + "\\n"
for _ in range(500_000):
    sys.stdout.write(line)
sys.stdout.flush()
while not os.path.exists(sys.argv[1]):  # until the test, on the GUI thread, has seen it all
    dev.synchronize()
print("the end")
"""


def test_a_script_printing_50_mb_blocks_neither_the_service_nor_the_dialog(qtbot, tmp_path, stop_after) -> None:
    script, go_on = tmp_path / "loud.py", tmp_path / "go_on"
    script.write_text(LOUD)
    dialog = ProfileDialog(script=str(script), output=str(tmp_path / "loud.h5"))
    qtbot.addWidget(dialog)
    stop_after(dialog)
    dialog.args.setText(str(go_on))
    dialog.start()
    # the GUI thread runs its event loop while the script prints, and the 50 MB are read as they
    # come: the script is still running (it waits for go_on), so nothing waited for its end
    qtbot.waitUntil(lambda: dialog._service.output is not None and dialog._service.output.total >= 50_000_000,
                    timeout=60_000)
    assert dialog.running
    with qtbot.waitSignal(dialog.captured, timeout=60_000):
        go_on.touch()
    dialog.wait()
    assert dialog.result.complete and dialog.result.exit_code == 0
    shown = dialog.script_output.toPlainText()
    assert shown.rstrip().endswith("the end") and len(shown) <= 2 * (64 << 10)  # the tail, not 50 MB in a widget
