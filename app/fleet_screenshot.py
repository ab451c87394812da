"""The fleet view of a folder of host captures as a PNG (the README's screenshot), no display
needed: ``QT_QPA_PLATFORM=offscreen python -m accelview.app.fleet_screenshot DIR OUT.png
[--workers N] [--sort KEY]``. The fleet is analysed as the app does it (``analyze_fleet``)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from accelview.model.errors import AccelviewError


def main(argv: list[str] | None = None) -> int:
    """Analyse the fleet in ``DIR`` (or the captures given) and save its fleet view."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("captures", nargs="+", help="a folder of host captures, or the captures")
    ap.add_argument("out")
    ap.add_argument("--workers", type=int, default=None, help="LocalCluster workers (default: this process)")
    ap.add_argument("--sort", default="rank", help="the metric to sort the hosts by (default: rank)")
    ap.add_argument("--size", default="1600x900", help="WIDTHxHEIGHT")
    ap.add_argument("--theme", default="dark", choices=("dark", "light"))
    args = ap.parse_args(argv)
    from accelview.model.fleet.analyze import analyze_fleet

    from .fleet_window import fleet_files

    files = fleet_files(args.captures) or list(args.captures)
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        report = analyze_fleet(files, workers=args.workers)
    except AccelviewError as e:
        print(f"accelview: {e}", file=sys.stderr)
        return 2
    print(f"analysed {len(files)} captures in {time.perf_counter() - t0:.1f} s "
          f"(client CPU {time.process_time() - c0:.1f} s)")
    from PySide6.QtWidgets import QApplication

    from .fleet_view import FleetView
    from .theme import THEMES, stylesheet

    app = QApplication.instance() or QApplication([])
    view = FleetView(THEMES[args.theme])
    view.setStyleSheet(stylesheet(args.theme))
    w, h = (int(x) for x in args.size.split("x"))
    view.resize(w, h)
    view.show()
    app.processEvents()
    view.set_report(report)
    view.sort_by(args.sort)
    app.processEvents()
    if not view.grab().save(str(Path(args.out))):
        print(f"accelview: {args.out}: could not write the PNG", file=sys.stderr)
        return 2
    print(view.title.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
