"""A corpus of hostile HDF5 captures, generated: each case takes a small valid capture and
corrupts it with h5py the way a crafted or damaged file would (tests/test_hostile_hdf5.py).

Cases that reach outside the file aim at ``outside``, a file holding ``MARKER``: it must
never show up in anything accelview prints or writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import h5py
import numpy as np

MARKER = "OUTSIDE-CONTENT-4f1c9e2b"
Case = Callable[[h5py.File, Path], None]


def _replace(f: h5py.File, name: str, data: np.ndarray, **kw: object) -> None:
    del f[name]
    f.create_dataset(name, data=data, **kw)


def _outside_blob(f: h5py.File, tmp: Path) -> tuple[Path, int]:
    """Write the capture's string blob plus one marker string to a file outside the capture, and
    make track 0's name that string: a capture that reads it would show the marker as a name."""
    blob, offsets = f["strings/blob"][()], f["strings/offsets"][()].astype("i8")
    data = blob.tobytes() + MARKER.encode()
    path = tmp / "outside.bin"
    path.write_bytes(data)
    _replace(f, "strings/offsets", np.append(offsets, len(data)))
    names = f["tracks/name"][()].astype("i4")  # the type the reader expects: only the blob lies
    names[0] = len(offsets)
    _replace(f, "tracks/name", names)
    return path, len(data)


def _other_h5(tmp: Path, data: np.ndarray | None = None, external: tuple[Path, int] | None = None) -> Path:
    """Another HDF5 file with dataset /blob: ``data``, or raw storage in an external file."""
    path = tmp / "other.h5"
    with h5py.File(path, "w") as o:
        if external is not None:
            o.create_dataset("blob", shape=(external[1],), dtype="u1", external=[(str(external[0]), 0, external[1])])
        else:
            o.create_dataset("blob", data=data)
    return path


def external_storage_blob(f: h5py.File, tmp: Path) -> None:
    outside, n = _outside_blob(f, tmp)
    del f["strings/blob"]
    f.create_dataset("strings/blob", shape=(n,), dtype="u1", external=[(str(outside), 0, n)])


def external_storage_column(f: h5py.File, tmp: Path) -> None:
    data = f["slices/dur_ns"][()]
    outside = tmp / "outside.bin"
    outside.write_bytes(data.tobytes() + MARKER.encode())
    del f["slices/dur_ns"]
    f.create_dataset("slices/dur_ns", shape=data.shape, dtype=data.dtype,
                     external=[(str(outside), 0, data.nbytes)])


def _virtual_blob(f: h5py.File, source: Path, n: int) -> None:
    del f["strings/blob"]
    layout = h5py.VirtualLayout(shape=(n,), dtype="u1")
    layout[:] = h5py.VirtualSource(str(source), "blob", shape=(n,))
    f.create_virtual_dataset("strings/blob", layout)


def virtual_over_external_storage(f: h5py.File, tmp: Path) -> None:
    """The issue's case: the string blob a virtual dataset over external raw storage."""
    outside, n = _outside_blob(f, tmp)
    _virtual_blob(f, _other_h5(tmp, external=(outside, n)), n)


def virtual_over_other_file(f: h5py.File, tmp: Path) -> None:
    outside, n = _outside_blob(f, tmp)
    _virtual_blob(f, _other_h5(tmp, data=np.frombuffer(outside.read_bytes(), "u1")), n)


def virtual_over_same_file(f: h5py.File, tmp: Path) -> None:
    f["blob"] = f["strings/blob"][()]
    _virtual_blob(f, Path("."), f["blob"].shape[0])


def _external_link(name: str, target: str, data_from: str) -> Case:
    def case(f: h5py.File, tmp: Path) -> None:
        other = tmp / "other.h5"
        with h5py.File(other, "w") as o:
            if data_from:  # the same numbers, kept in another file
                o[target] = f[data_from][()]
            else:
                outside = np.frombuffer(_outside_blob(f, tmp)[0].read_bytes(), "u1")
                o["blob" if target == "/blob" else "strings/blob"] = outside
                if target == "/strings":
                    o["strings/offsets"] = f["strings/offsets"][()]
        del f[name]
        f[name] = h5py.ExternalLink(str(other), target)
    return case


def soft_link_to_external_link(f: h5py.File, tmp: Path) -> None:
    _external_link("strings/blob", "/blob", "")(f, tmp)
    f.move("strings/blob", "evil")
    f["strings/blob"] = h5py.SoftLink("/evil")


def _soft_loop(name: str, hops: int) -> Case:
    def case(f: h5py.File, tmp: Path) -> None:
        del f[name]
        f[name] = h5py.SoftLink("/loop0")
        for i in range(hops):
            f[f"loop{i}"] = h5py.SoftLink(f"/loop{(i + 1) % hops}")
    return case


def soft_link_chain(f: h5py.File, tmp: Path) -> None:
    """Forty soft links in a row to the real column: no loop, but more than any capture needs."""
    f.move("slices/dur_ns", "real")
    f["slices/dur_ns"] = h5py.SoftLink("/hop0")
    for i in range(40):
        f[f"hop{i}"] = h5py.SoftLink(f"/hop{i + 1}" if i < 39 else "/real")


def soft_link_inside(f: h5py.File, tmp: Path) -> None:
    """Allowed: a column moved elsewhere in the file and reached through one soft link."""
    f.move("slices/dur_ns", "moved/dur_ns")
    f["slices/dur_ns"] = h5py.SoftLink("/moved/dur_ns")


def _reference_column(kind: str) -> Case:
    def case(f: h5py.File, tmp: Path) -> None:
        n = f["slices/dur_ns"].shape[0]
        if kind == "object":
            _replace(f, "slices/dur_ns", np.array([f["strings"].ref] * n, dtype=h5py.ref_dtype))
        else:
            ref = f["strings/blob"].regionref[0:4]
            _replace(f, "slices/dur_ns", np.array([ref] * n, dtype=h5py.regionref_dtype))
    return case


def metadata_reference(f: h5py.File, tmp: Path) -> None:
    f.attrs["metadata"] = f["strings"].ref


def _rows(name: str, rows: int, contiguous: bool = False) -> Case:
    """The column (or every column of the group, so their lengths agree) claims ``rows`` rows
    without storing them."""
    def case(f: h5py.File, tmp: Path) -> None:
        names = [f"{name}/{k}" for k in f[name]] if isinstance(f[name], h5py.Group) else [name]
        for n in names:
            dtype = f[n].dtype
            del f[n]
            if contiguous:
                f.create_dataset(n, shape=(rows,), dtype=dtype)
            else:
                f.create_dataset(n, shape=(rows,), dtype=dtype, maxshape=(None,), chunks=(16384,),
                                 compression="gzip")
    return case


def huge_chunk(f: h5py.File, tmp: Path) -> None:
    data = f["slices/dur_ns"][()].astype("i8")
    _replace(f, "slices/dur_ns", data, chunks=(1 << 28,), maxshape=(None,))


def foreign_filter(f: h5py.File, tmp: Path) -> None:
    _replace(f, "slices/dur_ns", f["slices/dur_ns"][()].astype("i8"), scaleoffset=0)


def _attr(key: str, value: object) -> Case:
    def case(f: h5py.File, tmp: Path) -> None:
        f.attrs[key] = value
    return case


def _device_spec(spec: dict) -> Case:
    return _attr("metadata", "json:" + json.dumps({"device_spec": spec}))


def _set(name: str, row: int | slice, value: int) -> Case:
    def case(f: h5py.File, tmp: Path) -> None:
        data = f[name][()]
        data = data.astype(np.result_type(data.dtype, np.min_scalar_type(-abs(value))))
        data[row] = value
        _replace(f, name, data)
    return case


def _parents_loop(f: h5py.File, tmp: Path) -> None:
    """Tracks 0 and 1 each the other's parent."""
    parent = f["tracks/parent"][()].astype("i4")
    parent[0], parent[1] = 1, 0
    _replace(f, "tracks/parent", parent)


def _staging_external(f: h5py.File, tmp: Path) -> None:
    """An unfinished capture (recovered from its staging area) whose staged blob lives outside."""
    external_storage_blob(f, tmp)
    for group in ("strings", "tracks"):
        f.move(group, f"staging/{group}")
    f.attrs["finalized"] = False


# case -> (corruption, what the one line says, exit status of info, analyze, convert)
REFUSED = (2, 2, 2)
CASES: dict[str, tuple[Case, str, tuple[int, int, int]]] = {
    "external storage: string blob": (external_storage_blob, "keeps its data in external files", REFUSED),
    "external storage: numeric column": (external_storage_column, "keeps its data in external files", REFUSED),
    "virtual over external storage": (virtual_over_external_storage, "is a virtual dataset", REFUSED),
    "virtual over another file": (virtual_over_other_file, "is a virtual dataset", REFUSED),
    "virtual over the same file": (virtual_over_same_file, "is a virtual dataset", REFUSED),
    "external link: dataset": (_external_link("strings/blob", "/blob", ""), "is an external link", REFUSED),
    "external link: group": (_external_link("strings", "/strings", ""), "is an external link", REFUSED),
    "external link: numeric column": (_external_link("tracks/kind", "/kind", "tracks/kind"),
                                      "is an external link", REFUSED),
    "soft link to an external link": (soft_link_to_external_link, "is an external link", REFUSED),
    "soft link to itself": (_soft_loop("strings/blob", 1), "soft links (a loop?)", REFUSED),
    "soft link loop of three": (_soft_loop("slices/dur_ns", 3), "soft links (a loop?)", REFUSED),
    "soft link loop on a group": (_soft_loop("strings", 2), "soft links (a loop?)", REFUSED),
    "soft link chain of forty": (soft_link_chain, "soft links (a loop?)", REFUSED),
    "object references as a column": (_reference_column("object"), "not numbers", REFUSED),
    "region references as a column": (_reference_column("region"), "not numbers", REFUSED),
    "object reference as metadata": (metadata_reference, "attribute 'metadata' holds", REFUSED),
    "staged blob in external storage": (_staging_external, "keeps its data in external files", REFUSED),
    "2^40 rows: every tracks column": (_rows("tracks", 1 << 40), "claims 1,099,511,627,776 rows", REFUSED),
    "2^40 rows: one slice column": (_rows("slices/dur_ns", 1 << 40), "claims 1,099,511,627,776 rows", REFUSED),
    "2^40 rows: string offsets": (_rows("strings/offsets", 1 << 40), "claims 1,099,511,627,776 rows", REFUSED),
    "2^40 rows: string blob": (_rows("strings/blob", 1 << 40), "claims 1,099,511,627,776 rows", REFUSED),
    "2^40 rows: contiguous": (_rows("flows", 1 << 40, contiguous=True), "claims 1,099,511,627,776 rows",
                              REFUSED),
    "2^40 rows: anchor index": (_rows("slices/anchor_row", 1 << 40), "claims 1,099,511,627,776 rows", REFUSED),
    "chunk of 2^28 rows": (huge_chunk, "chunks of 268,435,456 rows", REFUSED),
    "a filter accelview does not write": (foreign_filter, "filter accelview does not write", REFUSED),
    "metadata: a number": (_attr("metadata", 7), "metadata attribute is a int", REFUSED),
    "metadata: a JSON list": (_attr("metadata", "json:[1, 2]"), "metadata attribute is a list", REFUSED),
    "metadata: plain text": (_attr("metadata", "hello"), "metadata attribute is a str", REFUSED),
    "metadata: an array": (_attr("metadata", np.arange(3)), "metadata attribute is a ndarray", REFUSED),
    "metadata: broken JSON": (_attr("metadata", "json:{bad"), "cannot read attributes", REFUSED),
    "metadata: JSON nested 100,000 deep": (_attr("metadata", "json:" + "[" * 100_000), "cannot read attributes",
                                           REFUSED),
    "metadata: invalid UTF-8": (_attr("metadata", np.void(b"json:\xff\xfe")), "attribute 'metadata' holds",
                                REFUSED),
    "finalized flag: an array": (_attr("finalized", np.arange(2)), "finalized attribute is a ndarray", REFUSED),
    "device spec: PCIe generation 9": (_device_spec({"pcie": {"gen": 9, "lanes": 16, "mps": 256}}),
                                       "unknown PCIe generation 9", (0, 2, 0)),
    "device spec: PCIe lanes as text": (_device_spec({"pcie": {"gen": 5, "lanes": "x16", "mps": 256}}),
                                        "invalid PCIe lanes 'x16'", (0, 2, 0)),
    "run index: track past the tracks": (_set("slices/runs/track", 0, 100), "track", REFUSED),
    "run index: end past the slices": (_set("slices/runs/end", -1, 100), "run index", REFUSED),
    "anchor index: row past the slices": (_set("slices/anchor_row", -1, 100), "anchor index", REFUSED),
    "counter track past the tracks": (_set("counters/track", slice(None), 100), "track", REFUSED),
    "anchor index: a run's anchor moved": (_set("slices/anchor_row", 2, 2), "anchor index", REFUSED),
    "counter anchor index: row past the counters": (_set("counters/anchor_row", 0, 100), "anchor index", REFUSED),
    "name past the string table": (_set("slices/name", 0, 10_000), "string", REFUSED),
    "track parent past the tracks": (_set("tracks/parent", 1, 100), "parent", REFUSED),
    "flow source past the slices": (_set("flows/src", 0, 10_000), "slice", REFUSED),
    "args row past the args table": (_set("slices/args", 0, 10_000), "arg", REFUSED),
    "string offset past the blob": (_set("strings/offsets", -1, 1 << 40), "string table", REFUSED),
    "string offsets going backwards": (_set("strings/offsets", 2, 0), "string table", REFUSED),
    "args set negative (found by fuzzing)": (_set("args/set", 0, -128), "negative argument set", REFUSED),
    "instant args past the args table": (_set("instants/args", 0, 10_000), "instants.args", REFUSED),
    "track its own parent": (_set("tracks/parent", 1, 1), "its own ancestor", REFUSED),
    "tracks parents of each other": (_parents_loop, "its own ancestor", REFUSED),
    "soft link inside the file (allowed)": (soft_link_inside, "", (0, 0, 0)),
}
