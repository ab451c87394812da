"""``accelview analyze DIR`` for a folder of one capture per host (``accelview profile`` of a
cluster workload), or several such files: the fleet analysis (model/fleet) of the hosts, each
capture analysed where it lies and the hosts combined on host0's clock, in this process or on
Dask (``--workers N``: a local cluster of N processes; ``--scheduler ADDRESS``: a running one);
hosts ranked by lateness, the findings (stragglers, compute vs communication, each collective's
skew and transfer) and the captures that failed. A merged cluster capture (``accelview merge``)
is analysed host by host in this process."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from accelview.model.analysis.distributed import analyze_cluster
from accelview.model.cluster import split_hosts
from accelview.model.errors import AccelviewError
from accelview.model.fleet.analyze import analyze_fleet
from accelview.model.fleet.engine import close_client, open_client
from accelview.model.text.values import format_duration
from accelview.model.trace import Trace


class ProgressBar:
    """``analysing [#####.....] 5/10 captures`` on one line of ``out``, redrawn as captures finish;
    only on a terminal (a log or a pipe would get every redraw, and error lines after it)."""

    WIDTH = 30

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.drawn = False
        self.shown = bool(getattr(out, "isatty", lambda: False)())

    def __call__(self, done: int, total: int) -> None:
        if not self.shown:
            return
        filled = self.WIDTH * done // max(total, 1)
        self.out.write(f"\ranalysing [{'#' * filled}{'.' * (self.WIDTH - filled)}] {done}/{total} captures")
        self.out.flush()
        self.drawn = True

    def close(self) -> None:
        """End the bar's line."""
        if self.drawn:
            self.out.write("\n")
            self.out.flush()


def run(paths: list[str], as_json: bool, top: int, *, scheduler: str | None = None, workers: int | None = None,
        timeout_s: float = 600.0) -> int:
    """Analyse the host captures ``paths`` (files or their folder) as a fleet and print the report."""
    if timeout_s <= 0:
        raise AccelviewError(f"--timeout {timeout_s:g}: must be more than 0 seconds")
    bar = ProgressBar(sys.stderr)
    client = None
    if scheduler is not None or workers is not None:
        client = open_client(scheduler, workers)
        if scheduler is None:
            print(f"Dask dashboard: {client.dashboard_link}", file=sys.stderr)
    try:
        report = analyze_fleet(paths, client=client, timeout_s=timeout_s, progress=bar)
    finally:
        bar.close()
        if client is not None:
            close_client(client)
    if as_json:
        print(json.dumps(report, default=str))
    else:
        print(format_fleet(report, top))
    for name, line in report["failures"].items():  # each on stderr too, as any unreadable file is
        print(f"accelview: {line if line.startswith(f'{name}:') else f'{name}: {line}'}", file=sys.stderr)
    return 1 if report["partial"] else 0


def format_fleet(report: dict[str, Any], top: int) -> str:
    """A FleetReport as text: the hosts ranked by lateness, the findings, the failures."""
    comm, hosts, failures = report["communication"], report["hosts"], report["failures"]
    t0, t1 = report["span_ns"]
    head = (f"{len(hosts)} host captures: {comm['collectives']} collectives over {format_duration(t1 - t0)} "
            f"on host0's clock")
    lines = [head + (f"; PARTIAL: {len(failures)} failed" if report["partial"] else "")]
    lines += ["", "Findings"]
    lines += [f"  {i}. [{f['severity']}] {f['kind']}: {f['summary']}; fix: {f['suggestion']}"
              for i, f in enumerate(report["findings"][:top], 1)] or ["  none"]
    lines += ["", "Hosts by lateness",
              f"  {'host':<16} {'rank':>4} {'late':>11} {'lost':>11} {'compute':>11} {'communication':>14} "
              f"{'skew':>11} {'transfer':>11} {'clock error':>12}"]
    for h in hosts:
        lines.append(f"  {h['host']:<16} {h['rank']:>4} {format_duration(h['late_ns']):>11}"
                     f" {format_duration(h['lost_ns']):>11} {format_duration(h['compute_ns']):>11}"
                     f" {format_duration(h['communication_ns']):>14} {format_duration(h['skew_ns']):>11}"
                     f" {format_duration(h['transfer_ns']):>11} {format_duration(h['clock']['error_ns']):>12}"
                     + (f"  {h['clock']['steps']} clock step(s)" if h["clock"]["steps"] else ""))
    lines += ["  late, lost: totals over all the collectives the host joined (late: its last device after the median "
              "participant; lost: after every other host's last, the time the others waited for it alone)",
              "  compute, communication, skew, transfer: summed over the host's devices"]
    if failures:
        lines += ["", "Failed (left out of the answer)"]
        lines += [f"  {line}" if line.startswith(f"{name}:") else f"  {name}: {line}"
                  for name, line in failures.items()]
    return "\n".join(lines)


def run_merged(trace: Trace, as_json: bool, top: int) -> int:
    """Analyse a merged cluster capture (``accelview merge``) host by host and print the report."""
    return show(analyze_cluster(split_hosts(trace)), as_json, top)


def show(report: dict[str, Any], as_json: bool, top: int) -> int:
    """Print a cluster report as JSON or text."""
    if as_json:
        print(json.dumps(report, default=str))
        return 0
    comm = report["communication"]
    print(f"{len(report['hosts'])} host captures ({', '.join(report['hosts'])}): {comm['collectives']} collectives")
    print("\nFindings")
    for i, f in enumerate(report["findings"][:top], 1):
        print(f"  {i}. [{f['severity']}] {f['kind']}: {f['summary']}; fix: {f['suggestion']}")
    if not report["findings"]:
        print("  none")
    print("\nPer host          compute   communication        skew    transfer")
    for h in comm["hosts"]:
        print(f"  {h['host']:<12} {format_duration(h['compute_ns']):>10} {format_duration(h['communication_ns']):>15}"
              f" {format_duration(h['skew_ns']):>11} {format_duration(h['transfer_ns']):>11}")
    return 0
