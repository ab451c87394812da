"""Errors that reach the user as one clear line naming the file and the problem."""

from __future__ import annotations

from pathlib import Path

NOT_A_FILE = "not a regular file (a pipe or a device?): save it to a file and open that"


class AccelviewError(Exception):
    """Base class of every error caused by user input (files, arguments).

    The CLI prints ``str(error)`` as one line and exits with status 2; the app shows it in a
    dialog. Anything else that escapes is a bug in accelview.
    """


class CaptureError(AccelviewError):
    """A file that cannot be read as a capture (or trace), with the path and the problem."""

    def __init__(self, path: str | Path, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class TraceInvariantError(AccelviewError):
    """A trace whose tables break the model's invariants (see ``Trace.self_check``)."""
