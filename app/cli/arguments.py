"""Argument types the commands share: ``A:B`` windows and ``WxH`` sizes."""

from __future__ import annotations

import argparse


def pair(text: str, sep: str, what: str) -> tuple[float, float]:
    """Two numbers separated by ``sep``; an argparse error naming ``what`` otherwise."""
    try:
        a, b = (float(x) for x in text.split(sep))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what} must look like A{sep}B, got {text!r}") from None
    return a, b


def add_window(p: argparse.ArgumentParser) -> None:
    """The ``--window START:END`` option: ns from the capture's start."""
    p.add_argument("--window", type=lambda s: pair(s, ":", "--window"), metavar="START:END",
                   help="time window in ns from the capture's start (default: all of it)")


def absolute_window(window: tuple[float, float] | None, trace_start: int) -> tuple[int, int] | None:
    """A ``--window`` as absolute [t0, t1) ns on the trace's timebase (ints: epoch-ns traces lose
    nothing); a user error when it is empty."""
    from accelview.model.errors import AccelviewError

    if window is None:
        return None
    if window[1] <= window[0]:
        raise AccelviewError(f"--window {window[0]:g}:{window[1]:g}: the end must come after the start")
    return trace_start + round(window[0]), trace_start + round(window[1])
