"""Run one function per capture path, in this process or as Dask tasks, and collect what failed.

The fleet analysis does its per-capture work (load, align, analyse, summarise) where the capture
lies: only the path travels to a worker and only the small result (plain data, numpy arrays)
travels back, so a fleet of hundreds of hosts never passes through the scheduler or the client. ``client=None`` runs
the same function sequentially in this process, which is the single-process path: both paths call
the same ``fn`` on the same path, so their results are identical by construction.

A failure is one line per path: the AccelviewError message for an unreadable capture, "worker
died" when its worker was killed, "timed out after N s" when the task did not finish in time.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from accelview.model.errors import AccelviewError

if TYPE_CHECKING:
    from distributed import Client

DEFAULT_WORKERS = 2
WORKER_DIED = "worker died"

Progress = Callable[[int, int], None]
CaptureFn = Callable[[str], dict[str, Any]]


@dataclass
class MapResult:
    """What ``map_captures`` brought back: each path's result, or its failure as one line."""

    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)

    @property
    def partial(self) -> bool:
        """True when at least one capture failed, so the answer covers only the rest."""
        return bool(self.failures)


def open_client(scheduler: str | None = None, workers: int | None = None, *, dashboard: bool = True) -> Client:
    """A Dask client: on the scheduler at ``scheduler`` (e.g. ``tcp://host:8786``), or on a new
    LocalCluster of ``workers`` single-threaded worker processes (default 2) when none is named,
    serving the Dask dashboard on a free port unless ``dashboard`` is False.

    Prints nothing; the dashboard link is ``client.dashboard_link``. Closing the client also
    closes a LocalCluster it started. An unreachable scheduler is an AccelviewError.
    """
    import dask
    from distributed import Client, LocalCluster

    if scheduler:
        try:
            return Client(scheduler, timeout="10s")
        except (OSError, TimeoutError, ValueError) as error:
            raise AccelviewError(f"{scheduler}: cannot reach the Dask scheduler ({error})") from None
    count = DEFAULT_WORKERS if workers is None else workers
    if count < 1:
        raise AccelviewError(f"--workers {count}: need at least one worker")
    # allowed-failures 0: a capture that kills its worker is reported at once, never handed to
    # the next worker to kill that one too; worker-saturation 1: a worker holds only the task it
    # runs, so its death fails no other capture (the LocalCluster's scheduler reads both here).
    with dask.config.set({"distributed.scheduler.allowed-failures": 0,
                          "distributed.scheduler.worker-saturation": 1.0}):
        cluster = LocalCluster(n_workers=count, threads_per_worker=1, processes=True,
                               dashboard_address=":0" if dashboard else None, silence_logs=logging.CRITICAL)
    return Client(cluster)


def close_client(client: Client) -> None:
    """Close ``client`` and the LocalCluster it was opened on, if any (not a scheduler it joined)."""
    cluster = client.cluster
    client.close()
    if cluster is not None:
        cluster.close()


def failure_line(error: BaseException) -> str:
    """One line for a capture's failure: the user-facing message of an AccelviewError, else the
    exception's type and message (an analysis bug is still named, never a traceback)."""
    text = str(error) if isinstance(error, AccelviewError) else f"{type(error).__name__}: {error}"
    return " ".join(text.split()) or type(error).__name__


def map_captures(fn: CaptureFn, paths: Iterable[str], *, client: Client | None = None,
                 timeout_s: float = 600.0, progress: Progress | None = None, fetch: bool = True) -> MapResult:
    """Run ``fn(path)`` once per capture path and collect the results and failures by path.

    ``fn`` must be a module-level function (workers import it by name) returning a small
    dict. With ``client`` each call is a Dask task given only the path; without, calls run one
    after another here. ``progress(done, total)`` is called as paths finish. A task running on a
    worker for more than ``timeout_s`` is cancelled and reported as timed out (its worker thread
    cannot be stopped: a LocalCluster's go with it when the client closes), as are those still
    waiting when no task has started or finished for as long. ``fetch=False`` (Dask only) leaves
    each result on its worker and puts its future in ``results``, for a task that uses them there.
    """
    order = list(dict.fromkeys(str(p) for p in paths))
    if client is None:
        return _map_here(fn, order, progress)
    return _map_dask(fn, order, client, timeout_s, progress, fetch)


def _map_here(fn: CaptureFn, paths: list[str], progress: Progress | None) -> MapResult:
    out = MapResult()
    for done, path in enumerate(paths, 1):
        try:
            out.results[path] = fn(path)
        except Exception as error:  # one bad capture never sinks the fleet
            out.failures[path] = failure_line(error)
        if progress is not None:
            progress(done, len(paths))
    return out


def _map_dask(fn: CaptureFn, paths: list[str], client: Client, timeout_s: float,
              progress: Progress | None, fetch: bool = True) -> MapResult:
    from distributed import wait

    out = MapResult()
    if not paths:
        return out
    # Keys unique per run and path: every run reads the files again (they may have changed).
    run = uuid.uuid4().hex[:8]
    keys = [f"fleet-{run}-{i}-{_safe(p)}" for i, p in enumerate(paths)]
    futures = client.map(fn, paths, key=keys, pure=False, retries=0)
    path_of = {f.key: p for f, p in zip(futures, paths, strict=True)}
    pending = set(futures)
    started: dict[str, float] = {}  # when each task was first seen running on a worker
    poll = min(0.5, timeout_s / 4)
    last_news = time.monotonic()
    while pending:
        try:
            finished = wait(list(pending), timeout=poll, return_when="FIRST_COMPLETED").done
        except TimeoutError:
            finished = set()
        now = time.monotonic()
        for future in finished:
            _collect(future, path_of[future.key], out, fetch)
            pending.discard(future)
            if progress is not None:
                progress(len(paths) - len(pending), len(paths))
        if finished:
            last_news = now
        running = {k for ks in client.processing().values() for k in ks}
        for future in pending:
            if future.key in running:
                started.setdefault(future.key, now)
                last_news = max(last_news, started[future.key])
        # A task running past the timeout is hung; with none running and none finishing for as
        # long (no worker left to run them), so are the ones still waiting.
        late = [f for f in pending if now - started.get(f.key, last_news) > timeout_s]
        if late:
            client.cancel(late, force=True)
            for future in late:
                out.failures[path_of[future.key]] = f"timed out after {timeout_s:g} s"
                pending.discard(future)
        if progress is not None and late:
            progress(len(paths) - len(pending), len(paths))
    return out


def _collect(future: Any, path: str, out: MapResult, fetch: bool = True) -> None:
    """A finished task's result (its future, left on its worker, unless ``fetch``), or its
    failure as one line, into ``out``."""
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    try:
        if not fetch and future.status == "finished":
            out.results[path] = future
            return
        out.results[path] = future.result()
    except (KilledWorker, FutureCancelledError):
        out.failures[path] = WORKER_DIED
    except Exception as error:
        out.failures[path] = failure_line(error)


def _safe(path: str) -> str:
    """A task-key fragment for ``path`` (the dashboard shows it), without Dask's key separators."""
    return "".join(c if c.isalnum() or c in "._" else "_" for c in path.rsplit("/", 1)[-1])[:60]
