"""The host's records as rows: API calls, the script's ranges, staging memcpy's and driver
submissions, read from the host log's columns. The whole run and the service share them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ..sim.runtime.hostlog import ApiCall
from .batch import TraceBatch


def add_calls(batch: TraceBatch, call_ints: Sequence[int], call_objects: Sequence[Any], api: int, thread: int,
              ranges: Sequence[ApiCall], memcpys: Sequence[ApiCall], sites: Sequence[int] | None = None,
              site_names: Mapping[int, tuple[str, str]] | None = None) -> tuple[int, list[int]]:
    """API calls (from the log's columns) as slices on ``api``, one argument set per argument dict
    and call site (``sites``: an id per call, -1 none), then ranges on ``thread`` and memcpys on
    ``api``; returns the first call's local index and the calls' cids."""
    ints = np.array(call_ints, dtype=np.int64).reshape(-1, 3)  # start_ns, end_ns, cid
    starts, cids = ints[:, 0].tolist(), ints[:, 2].tolist()
    durs = (ints[:, 1] - ints[:, 0]).tolist()
    intern, add_args = batch.intern, batch.add_args
    known: dict[tuple[int, int], int] = {}  # (id of an argument dict the runtime shares, site) → its set
    names, sets = [], []
    site_of = iter(sites) if sites is not None and len(sites) else None
    for name, a in zip(call_objects[0::2], call_objects[1::2], strict=True):  # strings interned in row order
        names.append(intern(name))
        site = next(site_of) if site_of is not None else -1
        key = (id(a), site)
        set_id = known.get(key)
        if set_id is None:
            if site >= 0 and site_names is not None:
                a = {**a, "site": site_names[site][0], "function": site_names[site][1]}
            set_id = known[key] = add_args(a)
        sets.append(set_id)
    first = batch.add_slice_ids(api, starts, durs, names, "runtime", cids, sets)
    for r in ranges:
        batch.add_slice(thread, r.start_ns, r.end_ns - r.start_ns, r.name, "user")
    for m in memcpys:
        batch.add_slice(api, m.start_ns, m.end_ns - m.start_ns, m.name, "host memcpy", correlation=m.cid,
                        args=m.args)
    return first, cids


def add_submissions(batch: TraceBatch, ints: Sequence[int], names: Sequence[str], queue: Callable[[int, int], int],
                    api_ids: Mapping[int, int], flows: list[tuple[int, int, int]], base: int) -> int:
    """Driver submissions (from the log's columns) as slices on their queues' tracks (``queue``,
    asked in order of first use), each joined by a ``submit`` flow (into ``flows``) to its call's
    flow id (``api_ids[cid]``); returns the first one's local index (flow ids: local + ``base``)."""
    n = 6
    devices, streams, submits, visibles, cids, chunks = (ints[i::n] for i in range(n))
    tracks: dict[tuple[int, int], int] = {}
    intern, add_args = batch.intern, batch.add_args
    first = batch.slice_count
    track_ids, name_ids, sets = [], [], []
    submit = -1
    named: dict[str, int] = {}  # a submission's name → its slice name's id
    chunk_sets: dict[int, int] = {}  # a chunk number → its argument set
    for i, (device, stream, name, chunk, cid) in enumerate(zip(devices, streams, names, chunks, cids, strict=True)):
        key = (device, stream)
        track = tracks.get(key)
        if track is None:
            track = tracks[key] = queue(device, stream)
        track_ids.append(track)
        name_id = named.get(name)
        if name_id is None:
            name_id = named[name] = intern(f"submit {name}")
        name_ids.append(name_id)
        if chunk >= 0:
            set_id = chunk_sets.get(chunk)
            if set_id is None:
                set_id = chunk_sets[chunk] = add_args({"chunk": chunk})
            sets.append(set_id)
        else:
            sets.append(-1)
        api = api_ids.get(cid)
        if api is not None:
            if submit < 0:  # strings in order of first use: "submit" at the first flow
                submit = intern("submit")
            flows.append((api, base + first + i, submit))
    batch.add_slice_ids(track_ids, submits, list(map(int.__sub__, visibles, submits)), name_ids, "driver", cids,
                        sets)
    return first
