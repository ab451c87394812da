"""run_app: creates the window, opens the file, runs the event loop and returns its exit code.

It runs in a child process: once a QApplication's main loop has quit, Qt refuses to run event
loops again, which would break the other GUI tests sharing pytest-qt's application."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import sys
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication
    from accelview.app.main import run_app
    from accelview.app.window import MainWindow

    app = QApplication(sys.argv[:1])
    seen = {}

    def check():
        wins = [w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow)]
        if wins and wins[-1].state.trace is not None:
            seen["slices"] = len(wins[-1].state.trace.slices)
            wins[-1].close()
            QApplication.quit()
        else:
            QTimer.singleShot(50, check)

    QTimer.singleShot(50, check)
    QTimer.singleShot(40000, QApplication.quit)
    code = run_app(sys.argv[1])
    print("exit", code, "slices", seen.get("slices", 0))
""")


def test_run_app_opens_the_file_and_returns(tmp_path):
    from accelview.capture.synthetic import demo_trace
    from accelview.model.store.writer import write_capture

    path = tmp_path / "run.h5"
    trace = demo_trace(steps=1, layers=1)
    write_capture(trace, path)
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", XDG_CONFIG_HOME=str(tmp_path))  # settings to scratch
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(path)], capture_output=True, text=True, timeout=90,
                         env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"exit 0 slices {len(trace.slices)}" in out.stdout
