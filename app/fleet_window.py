"""The fleet view in the main window (a mixin of MainWindow). When it appears:

- a cluster opened from several host captures (files, or their folder) can show its fleet view
  from View → Fleet (Ctrl+Shift+F); the analysis starts the first time it is shown;
- a fleet of more than ``FLEET_FIRST`` hosts opens on the fleet view instead of one merged
  timeline, which would be heavy to load and too tall to read; the view's "Open merged
  timeline" button still loads it on demand.

The fleet view takes the timeline's place (one central page or the other). Enter or a
double-click on a host loads that host's capture on the fleet's timebase (``host_timeline``) on
the loading thread and shows it in the timeline. The analysis runs in a LocalCluster of worker
processes for ``FLEET_LOCAL`` captures or more (``fleet/workers`` in the settings overrides how
many), in this process below that, or on the Dask scheduler named by ``fleet/scheduler``."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from accelview.model import Trace
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QStackedWidget

from .cli.cluster_input import host_captures
from .cluster_open import cluster_label, cluster_loader, is_cluster_choice
from .file_choosing import rank_folder
from .fleet_view import FleetView
from .loading import LoadJob, progress_dialog

FLEET_FIRST = 16  # more hosts than this open on the fleet view, not a merged timeline
FLEET_LOCAL = 8  # from this many captures the analysis starts a LocalCluster of worker processes
MAX_LOCAL_WORKERS = 4


def fleet_files(paths: Sequence[str]) -> list[str]:
    """The host captures ``paths`` stand for when they are a cluster of them (several files, or
    folders of captures), else [] (one file, or one folder of per-rank traces)."""
    if not paths or not is_cluster_choice(paths) or (len(paths) > 1 and rank_folder(list(paths))):
        return []
    out: list[str] = []
    for p in paths:
        out.extend([str(c) for c in host_captures(Path(p))] if Path(p).is_dir() else [p])
    return out


def fleet_options(n: int, settings: Any) -> dict[str, Any]:
    """``analyze_fleet``'s engine options for ``n`` captures: the settings' scheduler address if
    any, else a LocalCluster for FLEET_LOCAL captures or more, else this process."""
    scheduler = str(settings.value("fleet/scheduler", "") or "").strip()
    if scheduler:
        return {"scheduler": scheduler}
    try:
        workers = int(settings.value("fleet/workers", 0) or 0)
    except (TypeError, ValueError):
        workers = 0
    if workers <= 0:
        workers = min(os.cpu_count() or 1, MAX_LOCAL_WORKERS) if n >= FLEET_LOCAL else 0
    return {"workers": workers or None}


class Fleeting:
    """The fleet page, View → Fleet and the drill-down for MainWindow (which provides
    ``settings``, ``theme``, ``theme_action``, ``state``, ``counter_model``, ``job``, ``set_trace``,
    ``open_path``, ``add_recent``, ``bookmarks`` and ``_failed``)."""

    fleet_analyze: Callable[..., dict[str, Any]] | None = None  # analyze_fleet (tests put another)
    fleet_drill: Callable[[dict[str, Any], str], Trace] | None = None  # host_timeline (likewise)

    def _build_fleet(self) -> None:
        """Put the fleet view beside the timeline as a second central page, and its menu entry."""
        self.fleet_paths: list[str] = []
        self.fleet_label = ""
        self.fleet_view = FleetView(self.theme)
        split = self.centralWidget()  # the timeline over the counter strips: the fleet takes the timeline's
        self.pages = QStackedWidget()  # place, the strips (of the trace below it) hidden meanwhile
        top = split.replaceWidget(0, self.pages)
        self.pages.setSizePolicy(top.sizePolicy())  # its stretch: the timeline takes the height
        self.pages.addWidget(top)
        self.pages.addWidget(self.fleet_view)
        self._strips = split.widget(1)
        self._load_behind: object = None  # the last load when the fleet view was shown
        self.state.trace_changed.connect(self._trace_shown)
        self.fleet_view.drill.connect(self.open_fleet_host)
        self.fleet_view.merged_requested.connect(self.open_fleet_merged)
        self.fleet_view.analysis_failed.connect(self._failed)  # the dialog bad input gets
        self.fleet_action = QAction("&Fleet", self, checkable=True, shortcut="Ctrl+Shift+F", enabled=False)
        self.fleet_action.setToolTip("The hosts of the open cluster ranked, one summary lane each")
        self.fleet_action.toggled.connect(self.show_fleet)
        view = next((a.menu() for a in self.menuBar().actions() if a.text() == "&View"), None)
        if isinstance(view, QMenu):
            sep = next((a for a in view.actions() if a.isSeparator()), None)
            view.insertAction(sep, self.fleet_action)  # None: at the end
        self.theme_action.toggled.connect(lambda _on: self.fleet_view.set_theme(self.theme))
        self.drilled_host = ""  # the host whose timeline is behind the fleet view, if drilled into

    def _title_docks(self, fleet_up: bool) -> None:
        """While the fleet view is up, the side docks (which follow the timeline's trace, not the
        fleet) say whose they show: the host drilled into, or the timeline behind the view."""
        whose = ""
        if fleet_up and self.state.trace is not None:
            whose = f"{self.drilled_host} (drilled in)" if self.drilled_host else "timeline behind"
        for name, dock in self.docks.items():
            dock.setWindowTitle(f"{name} · {whose}" if whose else name)

    def open_paths(self, paths: list[str]) -> object:
        """As FileChoosing's; several host captures also become the fleet behind View → Fleet,
        and more than FLEET_FIRST of them open on the fleet view (returned) instead."""
        files = fleet_files(paths)
        if not files:
            return super().open_paths(paths)
        self.fleet_view.stop()
        self.fleet_paths, self.fleet_label = files, cluster_label(paths)
        self.fleet_view.set_report(None)
        self.fleet_action.setEnabled(True)
        if len(files) <= FLEET_FIRST:
            self.fleet_action.setChecked(False)
            return super().open_paths(paths)
        self.add_recent(self.fleet_label)
        if self.fleet_action.isChecked():
            self.show_fleet(True)
        else:
            self.fleet_action.setChecked(True)
        return self.fleet_view

    def show_fleet(self, on: bool) -> None:
        """Show the fleet view (analysing the fleet if not yet done) or the timeline."""
        on = on and bool(self.fleet_paths)
        self.pages.setCurrentIndex(1 if on else 0)
        self._strips.setVisible(not on and bool(self.counter_model.entries))
        if self.fleet_action.isChecked() != on:
            self.fleet_action.setChecked(on)
        self._title_docks(on)
        if not on:
            return
        self._load_behind = self.job  # if still to arrive, it arrives behind the fleet view
        self.setWindowTitle(f"accelview — fleet {self.fleet_label}")
        if self.fleet_view.report is None and not self.fleet_view.running:
            self.fleet_view.analyze(self.fleet_paths, self.fleet_analyze,
                                    **fleet_options(len(self.fleet_paths), self.settings))
        self.fleet_view.table.setFocus()

    def _trace_shown(self) -> None:
        """A new trace goes to the timeline, unless it is the load that was already under way
        when the user turned to the fleet view (a merged timeline arriving late stays behind)."""
        self.drilled_host = ""  # a drilled host's trace names it once shown (_fleet_host_loaded)
        if self.job is None or self.job is not self._load_behind:
            self.show_fleet(False)
        else:
            self._title_docks(self.pages.currentIndex() == 1)

    def open_fleet_host(self, host: str) -> LoadJob | None:
        """Load ``host``'s capture moved onto the fleet's timebase and show it in the timeline."""
        report = self.fleet_view.report
        if report is None:
            return None
        drill = self.fleet_drill

        def load(_label: str, progress: Callable[[float], None] | None = None,
                 cancel: Callable[[], bool] | None = None) -> Trace:
            fn = drill
            if fn is None:
                from accelview.model.fleet.drill import host_timeline as fn
            return fn(report, host)

        if self.job is not None and self.job.running:
            self.job.cancel()
        title = f"{host} of fleet {self.fleet_label}"
        job = LoadJob(title, load, self)
        self.job = job
        self.progress = progress_dialog(job, host, self)
        span = report.get("span_ns") or None
        job.loaded.connect(lambda tr: self._fleet_host_loaded(host, title, tr, job.lod, span))
        job.failed.connect(self._failed)
        job.start()
        return job

    def _fleet_host_loaded(self, host: str, title: str, trace: Trace, lod: object, span: list[int] | None) -> None:
        """Show the host's trace over the fleet's span, its ruler counting from the span's start
        as the fleet view's does, so a time read in one is the same time in the other."""
        self.set_trace(trace, title, lod)  # shows the timeline
        self.drilled_host = host
        self.bookmarks.set_source(None)  # its sidecar is on the host's own clock, not the fleet's
        if span:
            self.state.set_time_origin(float(span[0]) - self.state.origin)
            self.state.show_window(float(span[0]), float(span[1]), pad=0.01)
        self.statusBar().showMessage(f"{title}, on the fleet's timebase (View → Fleet goes back)", 8000)

    def open_fleet_merged(self) -> LoadJob | None:
        """The fleet's hosts as one merged timeline (as a cluster of few hosts opens)."""
        if not self.fleet_paths:
            return None
        self.show_fleet(False)
        return self.open_path(self.fleet_label, cluster_loader(self.fleet_paths))

    def closeEvent(self, event: Any) -> None:
        self.fleet_view.shutdown()
        super().closeEvent(event)
