"""The comparison view of two runs as a PNG (the README's screenshot), no display needed:
``QT_QPA_PLATFORM=offscreen python -m accelview.app.compare_screenshot A B OUT.png [--row N]``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from accelview.model.compare.diff import compare
from accelview.model.errors import AccelviewError
from accelview.model.loader import load_trace


def main(argv: list[str] | None = None) -> int:
    """Compare two files and save the comparison view (``--row``: the table row selected)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("out")
    ap.add_argument("--row", type=int, default=-1, help="the diff table's row to select (default none)")
    ap.add_argument("--size", default="1600x900", help="WIDTHxHEIGHT")
    ap.add_argument("--theme", default="dark", choices=("dark", "light"))
    args = ap.parse_args(argv)
    try:
        diff = compare(load_trace(args.a), load_trace(args.b))
    except AccelviewError as e:
        print(f"accelview: {e}", file=sys.stderr)
        return 2
    from PySide6.QtWidgets import QApplication

    from .compare_view import ComparisonView
    from .theme import THEMES, stylesheet

    app = QApplication.instance() or QApplication([])
    view = ComparisonView(diff, THEMES[args.theme])
    view.setStyleSheet(stylesheet(args.theme))
    w, h = (int(x) for x in args.size.split("x"))
    view.resize(w, h)
    view.show()
    app.processEvents()
    if args.row >= 0:
        view.table.selectRow(args.row)
        app.processEvents()
    view.grab().save(str(Path(args.out)))
    print(diff.summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
