"""Bookmark sidecars, headless: round trip beside the trace, names kept across marks, and bad or
unwritable sidecars raise one-line BookmarkErrors instead of crashing or running anything."""

from __future__ import annotations

import json
import os

import pytest
from accelview.model.view.bookmarks import (
    Bookmark,
    BookmarkError,
    load_bookmarks,
    reconcile,
    save_bookmarks,
    sidecar_path,
)


def test_round_trip_beside_the_trace_and_capture_untouched(tmp_path):
    trace = tmp_path / "run.h5"
    trace.write_bytes(b"capture")
    t0 = 1_700_000_000_000_000_123
    marks = [Bookmark("warm-up", 10, 20), Bookmark("step 3 stall", t0, t0 + 876)]
    side = save_bookmarks(trace, marks)
    assert side == tmp_path / "run.h5.accelview.json" == sidecar_path(trace)
    assert load_bookmarks(trace) == marks  # absolute ns survive exactly (no float rounding)
    assert trace.read_bytes() == b"capture"


def test_no_sidecar_means_no_bookmarks_and_none_is_written(tmp_path):
    trace = tmp_path / "run.h5"
    assert load_bookmarks(trace) == []
    assert save_bookmarks(trace, []) is None
    assert not sidecar_path(trace).exists()


def test_deleting_the_last_bookmark_empties_the_sidecar(tmp_path):
    trace = tmp_path / "run.h5"
    save_bookmarks(trace, [Bookmark("a", 1, 2)])
    save_bookmarks(trace, [])
    assert load_bookmarks(trace) == []


@pytest.mark.parametrize("text", [
    "{not json",
    "[]",
    '{"version": 1}',
    '{"version": 99, "bookmarks": []}',
    '{"version": 1, "bookmarks": [{"name": "x", "start_ns": 5, "end_ns": 1}]}',
    '{"version": 1, "bookmarks": [{"name": 3, "start_ns": 1, "end_ns": 2}]}',
    '{"version": 1, "bookmarks": [{"name": "x", "start_ns": 1.5, "end_ns": 2}]}',
    '{"version": 1, "bookmarks": [{"name": "x", "start_ns": true, "end_ns": 2}]}',
    '{"version": 1, "bookmarks": ["__import__(\'os\').system(\'true\')"]}',
    "[" * 100_000,
])
def test_bad_sidecars_raise_one_line_errors(tmp_path, text):
    trace = tmp_path / "run.h5"
    sidecar_path(trace).write_text(text)
    with pytest.raises(BookmarkError) as e:
        load_bookmarks(trace)
    assert "\n" not in str(e.value) and "run.h5.accelview.json" in str(e.value)


def test_binary_sidecar_is_a_bookmark_error(tmp_path):
    trace = tmp_path / "run.h5"
    sidecar_path(trace).write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(BookmarkError):
        load_bookmarks(trace)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_read_only_folder_is_a_bookmark_error_and_leaves_nothing(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(BookmarkError, match="cannot save bookmarks"):
            save_bookmarks(folder / "run.h5", [Bookmark("a", 1, 2)])
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_unwritable_sidecar_path_is_a_bookmark_error(tmp_path):
    with pytest.raises(BookmarkError):
        save_bookmarks(tmp_path / "missing-dir" / "run.h5", [Bookmark("a", 1, 2)])


def test_reconcile_keeps_names_and_numbers_new_marks():
    old = [Bookmark("warm-up", 0, 10), Bookmark("Mark 4", 20, 30)]
    new = reconcile(old, [(0, 10), (20, 30), (40, 50)])
    assert [b.name for b in new] == ["warm-up", "Mark 4", "Mark 5"]
    assert reconcile(new, [(20, 30)]) == [Bookmark("Mark 4", 20, 30)]
    assert reconcile(new, []) == []


def test_sidecar_is_plain_json_a_person_can_read(tmp_path):
    trace = tmp_path / "run.h5"
    save_bookmarks(trace, [Bookmark("a", 1, 2)])
    assert json.loads(sidecar_path(trace).read_text()) == {
        "version": 1, "bookmarks": [{"name": "a", "start_ns": 1, "end_ns": 2}]}


def test_permission_denied_is_a_bookmark_error_even_as_root(tmp_path, monkeypatch):
    """What a read-only folder does to a user who is not root, whoever runs the suite."""
    import tempfile

    def denied(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", denied)
    with pytest.raises(BookmarkError, match="Permission denied"):
        save_bookmarks(tmp_path / "run.h5", [Bookmark("a", 1, 2)])
    assert list(tmp_path.iterdir()) == []
