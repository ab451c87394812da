"""Screenshots of the real main window for the docs, drawn offscreen:

    QT_QPA_PLATFORM=offscreen python -m accelview.app.screenshots [CAPTURE] [--out docs/screenshots] [--kineto TRACE]
        [--cluster RUN_DIR]

Without CAPTURE it opens the packaged demo capture (resources/demo.h5), or builds the synthetic
demo trace when that cannot be read."""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from accelview.model import Trace


def _demo() -> Trace:
    try:
        from accelview.model.loader import load_trace

        return load_trace(str(resources.files("accelview.resources").joinpath("demo.h5")))
    except Exception:  # no reader or no demo capture yet: the synthetic demo shows the same views
        from accelview.capture.synthetic import demo_trace

        return demo_trace()


def _pick(trace: Trace, min_chain: int = 3) -> int:
    """A slice at the end of a flow whose dependency chain crosses lanes and is compact in
    time (its arrows readable next to the slices); -1 when the trace has no flows."""
    from accelview.model.view.navigate import chain_of

    sl, fl = trace.slices, trace.flows
    ends = np.unique(np.concatenate((fl.src, fl.dst))) if len(fl) else np.arange(len(sl))
    ends = ends[(ends >= 0) & (ends < len(sl))]
    order = ends[np.argsort(-sl.dur_ns[ends].astype(np.int64), kind="stable")[:200]]
    best, best_score = -1, float("inf")
    for need in (min_chain, 2):
        for sid in order.tolist():
            chain, flows = chain_of(trace, sid)
            if len(chain) < need or len(flows) < need - 1 or len(np.unique(sl.track[chain])) < 2:
                continue
            ends_ = sl.start_ns[chain] + sl.dur_ns[chain]
            extent = float(ends_.max() - sl.start_ns[chain].min())
            score = extent / max(float(sl.dur_ns[chain].max()), 1.0)
            if score < best_score:
                best, best_score = sid, score
        if best >= 0:
            return best
    return int(order[0]) if len(order) else -1


def _window(trace: Trace, title: str, size: tuple[int, int]) -> tuple[Any, Any, str]:
    """(the application, the main window showing ``trace`` once its Findings panel is filled
    in, a scratch folder holding its settings: no user settings used, nothing left in the
    output folder)."""
    from PySide6.QtCore import QEventLoop, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from .window import MainWindow

    app = QApplication.instance() or QApplication([])
    scratch = tempfile.mkdtemp(prefix="accelview-shots-")
    win = MainWindow(theme="dark", settings=QSettings(os.path.join(scratch, "settings.ini"),
                                                     QSettings.Format.IniFormat))
    win.resize(*size)
    win.show()
    loop = QEventLoop()
    win.findings.report_ready.connect(lambda _r: loop.quit())
    QTimer.singleShot(60_000, loop.quit)
    win.set_trace(trace, title)
    loop.exec()  # the Findings panel fills in from its background analysis
    app.processEvents()
    return app, win, scratch


def take(trace: Trace, out: Path, size: tuple[int, int] = (1600, 1000), prefix: str = "",
         title: str = "demo.h5") -> list[Path]:
    """Write the screenshots; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    app, win, scratch = _window(trace, title, size)
    st = win.state
    paths = []

    def shot(name: str) -> None:
        app.processEvents()
        p = out / (prefix + name)
        win.grab().save(str(p))
        paths.append(p)

    derived = [i for i, e in enumerate(win.counter_model.entries) if e.metric]
    if derived:  # show a derived metric in the last strip
        win.counter_model.beginResetModel()
        win.counter_model.checked = [*win.counter_model.checked[:2], derived[0]]
        win.counter_model.endResetModel()
    shot("overview-dark.png")
    sid = _pick(trace)
    if sid >= 0:
        st.select(sid)
        chain = st.chain
        sl = trace.slices
        a = float(sl.start_ns[chain].min())
        b = float((sl.start_ns[chain] + sl.dur_ns[chain]).max())
        st.show_window(a, b, pad=0.6)
        shot("selection-chain-dark.png")
    lo, hi = trace.time_bounds()
    if win.bottleneck_action.isEnabled():  # device ops by their bottleneck class, over a prefill-to-decode stretch
        win.bottleneck_action.setChecked(True)
        st.select(-1)
        st.show_window(lo, lo + (hi - lo) * 0.3, pad=0)
        shot("bottleneck-colours-dark.png")
        win.bottleneck_action.setChecked(False)
        win.statusBar().clearMessage()
    if win.findings.model.rowCount():  # the top finding, chosen: zoomed to, its evidence highlighted, in full
        win.findings.show_finding(0)
        shot("findings-dark.png")
    paths += _side_views(app, win, trace, out, prefix)
    win.apply_theme("light")
    st.select(-1)
    st.show_window(lo + (hi - lo) * 0.2, lo + (hi - lo) * 0.32, pad=0)
    st.set_range(((hi - lo) * 0.23, (hi - lo) * 0.27))  # relative to the trace start
    names = [trace.strings[i] for i in np.unique(sl.name[: min(len(sl), 5000)])][:1] if len(trace.slices) else []
    win.search.edit.setText(names[0] if names else "")
    st.search(win.search.edit.text())  # now, not after the typing pause
    shot("range-search-light.png")
    win.apply_theme("dark")
    win.close()
    shutil.rmtree(scratch, ignore_errors=True)
    return paths


def _side_views(app: Any, win: Any, trace: Trace, out: Path, prefix: str) -> list[Path]:
    """``statistics-dark.png``: the Statistics dock by phase, the second phase's duration
    histogram, its fullest bar clicked (its slices highlighted on the timeline);
    ``utilisation-dark.png``: the Utilisation charts under the timeline over the whole run."""
    from PySide6.QtCore import Qt

    paths = []
    st = win.state
    dock = win.docks["Statistics"]
    dock.show()
    dock.raise_()
    win.resizeDocks([dock], [430], Qt.Orientation.Vertical)
    app.processEvents()
    panel = win.stats
    panel.by.setCurrentIndex(2)  # by phase
    panel.view.selectRow(min(1, panel.proxy.rowCount() - 1))
    if panel.hist_ids:
        panel.select_bin(int(np.argmax([len(b) for b in panel.hist_ids])))
    app.processEvents()
    paths.append(out / (prefix + "statistics-dark.png"))
    win.grab().save(str(paths[-1]))
    win.docks["Utilisation"].show()
    win.docks["Utilisation"].raise_()
    deadline = time.monotonic() + 60
    while win.utilisation.util is None and time.monotonic() < deadline:  # built on a worker thread
        app.processEvents()
        time.sleep(0.01)
    st.select(-1)
    lo, hi = trace.time_bounds()
    st.show_window(lo, hi, pad=0.01)
    app.processEvents()
    paths.append(out / (prefix + "utilisation-dark.png"))
    win.grab().save(str(paths[-1]))
    for name in ("Statistics", "Utilisation"):
        win.docks[name].hide()
    return paths


def take_kineto(trace: Trace, out: Path, size: tuple[int, int] = (1600, 1000), title: str = "") -> Path:
    """``pytorch-trace-chain-dark.png``: a PyTorch trace with the longest kernel whose launch is
    in the trace selected, its launch → kernel arrow shown."""
    out.mkdir(parents=True, exist_ok=True)
    app, win, scratch = _window(trace, title, size)
    sl, fl = trace.slices, trace.flows
    launched = np.unique(fl.dst) if len(fl) else np.arange(len(sl))
    sid = int(launched[np.argmax(sl.dur_ns[launched])])
    st = win.state
    st.select(sid)
    a = float(sl.start_ns[st.chain].min())
    b = float((sl.start_ns[st.chain] + sl.dur_ns[st.chain]).max())
    st.show_window(a, b, pad=0.6)
    app.processEvents()
    path = out / "pytorch-trace-chain-dark.png"
    win.grab().save(str(path))
    win.close()
    shutil.rmtree(scratch, ignore_errors=True)
    return path


def take_cluster(trace: Trace, out: Path, size: tuple[int, int] = (1600, 1000), title: str = "") -> list[Path]:
    """``cluster-grouped-dark.png``: a merged cluster grouped by host then device, the collective
    with the largest skew selected (its participants highlighted, their skew drawn);
    ``cluster-together-dark.png``: the same with every device of every host together."""
    out.mkdir(parents=True, exist_ok=True)
    app, win, scratch = _window(trace, title, size)
    st = win.state
    paths = []
    found = st.collectives.all() if st.collectives is not None else []
    if found:
        marks = max(found, key=lambda m: float(m.skew_ns.max()))
        st.select(int(marks.slices[int(np.argmin(marks.arrivals))]))
        skew = max(float(marks.skew_ns.max()), 1.0)
        st.show_window(float(marks.arrivals.min()) - skew * 0.6, marks.last_arrival_ns + skew * 1.2, pad=0)
    for name, together in (("cluster-grouped-dark.png", False), ("cluster-together-dark.png", True)):
        win.together_action.setChecked(together)
        app.processEvents()
        paths.append(out / name)
        win.grab().save(str(paths[-1]))
    win.close()
    shutil.rmtree(scratch, ignore_errors=True)
    return paths


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: take the screenshots."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    ap = argparse.ArgumentParser(description="Screenshots of the accelview window for the docs.")
    ap.add_argument("capture", nargs="?", help="capture or trace to show (default: the demo capture)")
    ap.add_argument("--out", default="docs/screenshots", help="output folder")
    ap.add_argument("--prefix", default="", help="prefix of the file names")
    ap.add_argument("--kineto", help="also a PyTorch profiler trace, its longest launched kernel selected "
                                     "(docs: ../shared/traces/kineto/a100_2rank_nccl_rank0.json.gz)")
    ap.add_argument("--cluster", help="also a cluster (a folder of host captures: accelview profile --workload "
                                      "dp-straggler --param hosts=4 --param devices=8 -o run/), grouped and "
                                      "devices together, a collective selected")
    args = ap.parse_args(argv)
    if args.capture:
        from accelview.model.loader import load_trace

        trace = load_trace(args.capture)
    else:
        trace = _demo()
    title = Path(args.capture).name if args.capture else "demo.h5"
    for p in take(trace, Path(args.out), prefix=args.prefix, title=title):
        print(p)
    if args.kineto:
        from accelview.model.loader import load_trace

        print(take_kineto(load_trace(args.kineto), Path(args.out), title=Path(args.kineto).name))
    if args.cluster:
        from accelview.model.cluster import load_cluster

        for p in take_cluster(load_cluster(args.cluster), Path(args.out), title=Path(args.cluster).name):
            print(p)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
