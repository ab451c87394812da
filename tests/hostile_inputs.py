"""A corpus of hostile inputs for the readers of several files: a cluster's folder of host
captures (``info``, ``analyze``, ``render`` and ``convert`` of a folder), ``accelview merge`` and
``accelview diff``. Generated, not stored: each case writes its files into a folder and returns
the command line to run, the path the one-line answer must start with, and a part of that line
(tests/test_hostile_inputs.py). Every case must end in that line and exit status 2.

The host captures are those of a small simulated cluster (2 hosts, a fraction of a second to
make), written once per test session by ``Hosts``."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

FOLDER_COMMANDS = ("info", "analyze", "render", "convert")


class Hosts:
    """The host captures of one cluster (``host0.h5``, ``host1.h5``), of a cluster of another
    shape (``other0.h5``: 3 hosts), a single-host capture (``single.h5``), their merge
    (``merged.h5``) and a Chrome trace (``trace.json``), written once into ``folder``."""

    def __init__(self, folder: Path) -> None:
        from accelview.capture.sim import workloads
        from accelview.capture.synthetic import demo_trace
        from accelview.model.cluster import load_cluster
        from accelview.model.export.chrome import export_chrome
        from accelview.model.store.writer import write_capture

        self.folder = folder
        two = workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 2}, seed=3)
        for h, t in enumerate(two.traces()):
            write_capture(t, folder / f"host{h}.h5")
        three = workloads.run_cluster("dp-straggler", {"hosts": 3, "devices": 2, "steps": 2}, seed=4)
        write_capture(three.traces()[0], folder / "other0.h5")
        write_capture(demo_trace(steps=2), folder / "single.h5")
        write_capture(load_cluster([folder / "host0.h5", folder / "host1.h5"]), folder / "merged.h5")
        export_chrome(demo_trace(steps=2), folder / "trace.json")

    def put(self, dest: Path, **files: str) -> None:
        """Copy the named captures into ``dest`` under new names (``new_name=stored_name``)."""
        dest.mkdir(parents=True, exist_ok=True)
        for new, old in files.items():
            shutil.copy(self.folder / old, dest / new.replace("__", "."))


@dataclass(frozen=True)
class Case:
    """``make(hosts, folder)`` writes the input and returns (argv, the path the line names);
    ``error``: a part of that line."""

    make: Callable[[Hosts, Path], tuple[list[str], Path]]
    error: str


# -- a cluster's folder: run through each of FOLDER_COMMANDS --------------------------------------
def folder_case(build: Callable[[Hosts, Path], Path], named: str | None = None) -> Callable[[Hosts, Path, str],
                                                                                            tuple[list[str], Path]]:
    """A folder built by ``build``, opened by one command; the line names ``named`` in it (or the folder)."""
    def make(hosts: Hosts, tmp: Path, command: str) -> tuple[list[str], Path]:
        d = build(hosts, tmp)
        argv = {"info": ["info", str(d)], "analyze": ["analyze", str(d)],
                "render": ["render", str(d), "--out", str(tmp / "shot.png"), "--size", "320x200"],
                "convert": ["convert", str(d), str(tmp / "out.h5")]}[command]
        return argv, d / named if named else d
    return make


def _mkdir(tmp: Path) -> Path:
    d = tmp / "run"
    d.mkdir()
    return d


def _one_text_file(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    (d / "notes.txt").write_text("not a capture\n")
    return d


def _text_named_h5(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5")
    (d / "host1.h5").write_text("not a capture\n")
    return d


def _same_host_twice(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, a__h5="host0.h5", b__h5="host0.h5", c__h5="host1.h5")
    return d


def _host_missing(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host1__h5="host1.h5")
    return d


def _two_clusters(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5", host1__h5="host1.h5", x__h5="other0.h5")
    return d


def _mixed_kinds(hosts: Hosts, tmp: Path) -> Path:
    """Host captures beside a single-host capture and a Chrome trace."""
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5", host1__h5="host1.h5", run__h5="single.h5", trace__json="trace.json")
    return d


def _merged_beside_its_hosts(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5", host1__h5="host1.h5", merged__h5="merged.h5")
    return d


def _truncated_host(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5", host1__h5="host1.h5")
    data = (d / "host1.h5").read_bytes()
    (d / "host1.h5").write_bytes(data[: len(data) // 2])
    return d


def _empty_host(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5")
    (d / "host1.h5").write_bytes(b"")
    return d


def _folder_named_h5(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5")
    (d / "host1.h5").mkdir()
    return d


def _fifo_named_h5(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5")
    os.mkfifo(d / "host1.h5")
    return d


def _dangling_link(hosts: Hosts, tmp: Path) -> Path:
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5")
    (d / "host1.h5").symlink_to(tmp / "gone.h5")
    return d


def _host_from_another_run_json(hosts: Hosts, tmp: Path) -> Path:
    """host1's place taken by a Chrome trace named .h5."""
    d = _mkdir(tmp)
    hosts.put(d, host0__h5="host0.h5", host1__h5="trace.json")
    return d


FOLDER_CASES: dict[str, tuple[Callable[[Hosts, Path, str], tuple[list[str], Path]], str]] = {
    "empty folder": (folder_case(lambda h, t: _mkdir(t)), "holds no trace"),
    "one file that is no capture": (folder_case(_one_text_file), "holds no trace"),
    "a text file named host1.h5": (folder_case(_text_named_h5, "host1.h5"), "not an HDF5 capture"),
    "the same host twice": (folder_case(_same_host_twice, "b.h5"), "host0 twice"),
    "a host missing": (folder_case(_host_missing, "host1.h5"), "host0 is missing"),
    "hosts of two clusters": (folder_case(_two_clusters, "x.h5"), "from a cluster of 3 hosts"),
    "mixed kinds": (folder_case(_mixed_kinds, "run.h5"), "not a host capture of a cluster"),
    "a merged capture beside its hosts": (folder_case(_merged_beside_its_hosts, "merged.h5"),
                                          "not a host capture of a cluster"),
    "a truncated host capture": (folder_case(_truncated_host, "host1.h5"), "truncated"),
    "an empty host capture": (folder_case(_empty_host, "host1.h5"), "the file is empty"),
    "a folder named host1.h5": (folder_case(_folder_named_h5, "host1.h5"), "holds no trace"),
    "a FIFO named host1.h5": (folder_case(_fifo_named_h5, "host1.h5"), "not a regular file"),
    "a dangling link named host1.h5": (folder_case(_dangling_link, "host1.h5"), "no such file"),
    "a Chrome trace named host1.h5": (folder_case(_host_from_another_run_json, "host1.h5"), "not an HDF5 capture"),
}


# -- accelview merge -------------------------------------------------------------------------
def _merge(inputs: list[str], output: str, named: str, *extra: str, setup: Callable[[Hosts, Path], None] | None = None
           ) -> Callable[[Hosts, Path], tuple[list[str], Path]]:
    """``merge`` of ``inputs`` (names of the stored captures, else paths under the case's folder)
    into ``output`` (under the case's folder, unless absolute); the line names ``named`` (an
    input, or "-o": the output)."""
    def make(hosts: Hosts, tmp: Path) -> tuple[list[str], Path]:
        if setup is not None:
            setup(hosts, tmp)
        stored = {"host0.h5", "host1.h5", "other0.h5", "single.h5", "merged.h5", "trace.json"}
        paths = {i: str(hosts.folder / i) if i in stored else str(tmp / i) for i in inputs}
        out = output if output.startswith("/") else str(tmp / output)
        return ["merge", *paths.values(), "-o", out, *extra], Path(out if named == "-o" else paths[named])
    return make


def _hosts_here(hosts: Hosts, tmp: Path) -> None:
    hosts.put(tmp / "here", host0__h5="host0.h5", host1__h5="host1.h5")


def _file_in_the_way(hosts: Hosts, tmp: Path) -> None:
    (tmp / "plain").write_text("a file, not a folder\n")


def _output_is_a_folder(hosts: Hosts, tmp: Path) -> None:
    (tmp / "out.h5").mkdir()


def _truncated_input(hosts: Hosts, tmp: Path) -> None:
    data = (hosts.folder / "host1.h5").read_bytes()
    (tmp / "cut.h5").write_bytes(data[: len(data) // 3])


MERGE_CASES: dict[str, Case] = {
    "merge: a host missing": Case(_merge(["host0.h5"], "m.h5", "host0.h5"), "host1 is missing"),
    "merge: a single-host capture": Case(_merge(["host0.h5", "single.h5"], "m.h5", "single.h5"),
                                         "not a host capture of a cluster"),
    "merge: a Chrome trace": Case(_merge(["trace.json", "host0.h5"], "m.h5", "trace.json"),
                                  "not a host capture of a cluster"),
    "merge: the merged capture again": Case(_merge(["merged.h5"], "m.h5", "merged.h5"),
                                            "already a merged cluster capture"),
    "merge: an input missing": Case(_merge(["host0.h5", "nope.h5"], "m.h5", "nope.h5"), "no such file"),
    "merge: a truncated input": Case(_merge(["host0.h5", "cut.h5"], "m.h5", "cut.h5", setup=_truncated_input),
                                     "truncated"),
    "merge: an empty folder": Case(_merge(["empty"], "m.h5", "empty",
                                          setup=lambda h, t: (t / "empty").mkdir()), "without captures"),
    "merge: output not .h5": Case(_merge(["host0.h5", "host1.h5"], "m.json", "-o"), "merge writes a capture"),
    "merge: output exists": Case(_merge(["host0.h5", "host1.h5"], "here/host0.h5", "-o", setup=_hosts_here),
                                 "already exists"),
    "merge: output is an input, forced": Case(_merge(["here/host0.h5", "here/host1.h5"], "here/host1.h5", "-o",
                                                     "--force", setup=_hosts_here), "is one of the inputs"),
    "merge: output in a missing folder": Case(_merge(["host0.h5", "host1.h5"], "no/such/dir/m.h5", "-o"),
                                              "cannot write"),
    "merge: output under a file": Case(_merge(["host0.h5", "host1.h5"], "plain/m.h5", "-o",
                                              setup=_file_in_the_way), "cannot write"),
    "merge: output is a folder, forced": Case(_merge(["host0.h5", "host1.h5"], "out.h5", "-o", "--force",
                                                     setup=_output_is_a_folder), "is a directory"),
    "merge: output in /proc": Case(_merge(["host0.h5", "host1.h5"], "/proc/accelview-m.h5", "-o"), "cannot write"),
}


# -- accelview diff --------------------------------------------------------------------------
def _diff(a: str, b: str, named: str, setup: Callable[[Hosts, Path], None] | None = None
          ) -> Callable[[Hosts, Path], tuple[list[str], Path]]:
    def make(hosts: Hosts, tmp: Path) -> tuple[list[str], Path]:
        if setup is not None:
            setup(hosts, tmp)
        stored = {"host0.h5", "single.h5", "merged.h5", "trace.json"}
        where = {n: str(hosts.folder / n) if n in stored else str(tmp / n) for n in (a, b, named)}
        return ["diff", where[a], where[b]], Path(where[named])
    return make


def _text(name: str, text: str) -> Callable[[Hosts, Path], None]:
    return lambda hosts, tmp: (tmp / name).write_text(text) and None


def _other_hdf5(hosts: Hosts, tmp: Path) -> None:
    import h5py

    with h5py.File(tmp / "other.h5", "w") as f:
        f["x"] = [1, 2, 3]


def _empty_trace(hosts: Hosts, tmp: Path) -> None:
    (tmp / "empty.json").write_text(json.dumps({"traceEvents": []}))


def _counters_only(hosts: Hosts, tmp: Path) -> None:
    (tmp / "counters.json").write_text(json.dumps({"traceEvents": [
        {"ph": "C", "pid": 1, "ts": i * 10.0, "name": "mem", "args": {"v": i}} for i in range(50)]}))


DIFF_CASES: dict[str, Case] = {
    "diff: A missing": Case(_diff("nope.h5", "single.h5", "nope.h5"), "no such file"),
    "diff: B truncated": Case(_diff("single.h5", "cut.h5", "cut.h5", setup=_truncated_input), "truncated"),
    "diff: B a text file": Case(_diff("single.h5", "notes.txt", "notes.txt", setup=_text("notes.txt", "hello\n")),
                                "not a capture or a trace"),
    "diff: B an HDF5 file of another program": Case(_diff("single.h5", "other.h5", "other.h5", setup=_other_hdf5),
                                                    "another program"),
    "diff: A an empty folder": Case(_diff("run", "single.h5", "run", setup=lambda h, t: (t / "run").mkdir()),
                                    "a folder with no host captures"),
    "diff: B empty": Case(_diff("single.h5", "empty.json", "empty.json", setup=_empty_trace), "nothing to compare"),
    "diff: A without slices": Case(_diff("counters.json", "single.h5", "counters.json", setup=_counters_only),
                                   "nothing to compare"),
    "diff: a host capture against a merged cluster": Case(_diff("host0.h5", "merged.h5", "merged.h5"),
                                                          "a merged cluster of 2 hosts, but"),
}

CASES: dict[str, Case] = {**MERGE_CASES, **DIFF_CASES}
