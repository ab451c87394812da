"""The ``accelview`` command: the app, and a subcommand for everything the app computes.

``accelview`` alone opens the app; ``accelview FILE`` opens it on a file; ``accelview info FILE``
prints a summary. User errors print one line and exit 2; nothing here imports Qt unless the
app is opened.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from accelview.model.errors import AccelviewError

HEADLESS_HELP = (
    "accelview: no display here, so the app cannot open; the CLI does the same work, e.g. "
    "`accelview analyze {demo}`, `accelview info FILE`, `accelview render FILE --out shot.png` (accelview --help)"
)


def demo_capture() -> Path:
    """The small demo capture shipped in resources/."""
    from importlib.resources import files

    return Path(str(files("accelview.resources") / "demo.h5"))


def _lazy(module: str, help_text: str) -> tuple[str, Callable[[argparse.ArgumentParser], None],
                                                Callable[[argparse.Namespace], int]]:
    """A command whose module is imported only when it runs (keeps start-up and Qt out)."""
    from importlib import import_module

    def configure(p: argparse.ArgumentParser) -> None:
        import_module(f"accelview.app.cli.{module}").configure(p)

    def run(args: argparse.Namespace) -> int:
        return import_module(f"accelview.app.cli.{module}").run(args)

    return help_text, configure, run


COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "info": _lazy("info", "print a capture's or trace's summary"),
    "analyze": _lazy("analyze", "find what limits a capture: findings, bottleneck breakdown, phases"),
    "metrics": _lazy("metrics", "list base counters, device constants and derived metrics"),
    "convert": _lazy("convert", "convert between .h5 captures and Chrome trace JSON (Perfetto)"),
    "render": _lazy("render", "draw the timeline (or another view) to a PNG, no display needed"),
    "stats": _lazy("stats", "statistics of device work by op name, lane or phase (text or CSV)"),
    "profile": _lazy("profile", "run a script (or a built-in workload) under capture into an .h5 file"),
    "diff": _lazy("diff", "compare two runs: what changed beyond run-to-run noise, and why"),
    "merge": _lazy("merge", "merge a cluster's host captures onto host0's clock into one capture"),
    "query": _lazy("query", "op statistics of a fleet of host captures, filtered and grouped (CSV, JSON)"),
}


def _command_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with only ``command``'s arguments configured: configuring one
    imports its module, and a command should not pay for importing all the others (~0.15 s)."""
    parser = argparse.ArgumentParser(prog="accelview", description="Performance analysis for PCIe accelerators.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, configure, _run) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if command is None or name == command:
            configure(p)
    return parser


def _app_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="accelview",
        description="Open the accelview app. Commands: " + ", ".join(COMMANDS) + " (accelview COMMAND --help).",
    )
    parser.add_argument("file", nargs="*", help="capture or trace to open (several host captures, or their "
                                                "folder: one cluster)")
    parser.add_argument("--demo", action="store_true", help="open the built-in demo capture")
    return parser


def has_display() -> bool:
    """True when Qt can show a window: a display server, or an explicit QT_QPA_PLATFORM."""
    if sys.platform != "linux":
        return True
    return any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def _open_app(args: argparse.Namespace) -> int:
    paths = [str(demo_capture())] if args.demo else list(args.file)
    for path in paths:
        if not Path(path).exists():
            raise AccelviewError(f"{path}: no such file")
    if not has_display():
        print(HEADLESS_HELP.format(demo=demo_capture()), file=sys.stderr)
        return 0  # the documented answer on a machine without a screen, not a failure
    from accelview.app.main import run_app

    return run_app(paths or None)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``accelview`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in COMMANDS:
            args = _command_parser(argv[0]).parse_args(argv)
            return COMMANDS[args.command][2](args)
        return _open_app(_app_parser().parse_args(argv))
    except AccelviewError as e:
        print(f"accelview: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


def cli() -> None:
    """Console-script wrapper: exit with ``main``'s status."""
    sys.exit(main())


if __name__ == "__main__":
    cli()
