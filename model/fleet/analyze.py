"""``analyze_fleet``: many host captures analysed where they lie and combined into one FleetReport.

Per capture, a task given only its path (``compact.compact_capture``: the extract, in arrays) runs in this process, on a
LocalCluster of worker processes, or on any Dask cluster (``engine.map_captures``); the hosts'
small extracts are combined here (``combine.combine``). The same function makes every extract on
every path, so the single-process and the Dask answers are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..cluster.inputs import expand
from ..errors import AccelviewError
from .combine import combine
from .compact import compact_capture, compact_fresh
from .engine import MapResult, Progress, close_client, map_captures, open_client

if TYPE_CHECKING:
    from distributed import Client


def fleet_paths(paths: Sequence[str | Path] | str | Path) -> list[str]:
    """The capture files of ``paths`` (files, or folders standing for the ``*.h5`` in them)."""
    return [str(p) for p in expand([paths] if isinstance(paths, str | Path) else list(paths))]


def analyze_fleet(paths: Sequence[str | Path] | str | Path, *, scheduler: str | None = None,
                  workers: int | None = None, timeout_s: float = 600.0, progress: Progress | None = None,
                  client: Client | None = None, cache: bool = True) -> dict[str, Any]:
    """The FleetReport of the host captures ``paths``: in this process when neither ``scheduler``
    nor ``workers`` (nor an open ``client``) is given, else one Dask task per capture on that
    client, on the scheduler at ``scheduler`` or on a LocalCluster of ``workers`` processes.
    ``cache=False`` recomputes every extract instead of reading the sidecars beside the captures.
    Raises ``AccelviewError`` when no capture could be analysed."""
    files = fleet_paths(paths)
    fn = compact_capture if cache else compact_fresh
    if client is None and scheduler is None and workers is None:
        return fleet_report(map_captures(fn, files, timeout_s=timeout_s, progress=progress))
    own = open_client(scheduler, workers) if client is None else None
    try:
        return _on_workers(own or client, fn, files, timeout_s, progress)
    finally:
        if own is not None:
            close_client(own)


def _on_workers(client: Client, fn: Any, files: list[str], timeout_s: float,
                progress: Progress | None) -> dict[str, Any]:
    """Each capture's extract made on a worker and left there; the combine run as one more task
    beside them, so only the FleetReport comes to this process: the client holds no host's
    extract, whatever the number of hosts (a desktop pointed at a big cluster stays small)."""
    result = map_captures(fn, files, client=client, timeout_s=timeout_s, progress=progress, fetch=False)
    if not result.results:
        return fleet_report(result)  # raises, naming the first failure
    task = client.submit(_report_of, dict(result.results), dict(result.failures), pure=False)
    try:
        return task.result()
    except AccelviewError:
        raise
    except Exception as error:  # its worker died or left: combine here what the workers still hold
        try:
            fetched = MapResult(dict(zip(result.results, client.gather(list(result.results.values())),
                                         strict=True)), dict(result.failures))
        except Exception:
            raise AccelviewError(f"the fleet's combine failed on its worker ({type(error).__name__}: "
                                 f"{str(error).splitlines()[0] if str(error) else 'no detail'})") from None
        return fleet_report(fetched)
    finally:
        task.release()


def _report_of(results: dict[str, dict[str, Any]], failures: dict[str, str]) -> dict[str, Any]:
    """The FleetReport of extracts already fetched (a task on a worker: Dask hands it the
    extracts its futures stood for)."""
    return fleet_report(MapResult(results, failures))


def fleet_report(result: MapResult) -> dict[str, Any]:
    """The FleetReport of ``map_captures``'s extracts and failures; ``AccelviewError`` when every
    capture failed (naming the first)."""
    if not result.results:
        first = next(iter(result.failures.items()), None)
        why = f": {first[1]}" if first else ""
        raise AccelviewError(f"none of the {len(result.failures)} captures could be analysed{why}")
    return combine(result.results, result.failures)
