"""A file that needs more memory than the system has left is refused before it is loaded, with
one line naming the file, what it needs and what is left (exit 2 from the CLI, a dialog in the
app), never read into swap. The memory left is faked through ``model.memory.MEMINFO``."""

from __future__ import annotations

import gzip
import json

import pytest
from accelview.app.cli.main import main
from accelview.model import memory
from accelview.model.errors import CaptureError
from accelview.model.export.chrome import export_chrome
from accelview.model.loader import load_trace
from accelview.model.store.reader import CaptureFile, open_capture
from accelview.model.store.writer import write_capture
from factories import busy_trace, tiny_trace


def fake_available(monkeypatch, tmp_path, kib: int) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text(f"MemTotal:       32000000 kB\nMemFree:         1000 kB\nMemAvailable:   {kib} kB\n")
    monkeypatch.setattr(memory, "MEMINFO", meminfo)


@pytest.fixture
def capture(tmp_path):
    path = tmp_path / "run.h5"
    write_capture(busy_trace(), path)
    return path


def test_available_memory_is_read_from_meminfo_and_unknown_without_it(monkeypatch, tmp_path):
    fake_available(monkeypatch, tmp_path, 2048)
    assert memory.available_bytes() == 2048 * 1024
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "absent")
    assert memory.available_bytes() is None
    memory.check_fits("x.h5", 1 << 50)  # unknown: nothing is refused
    (tmp_path / "old").write_text("MemTotal: 100 kB\nMemFree: 10 kB\n")
    monkeypatch.setattr(memory, "MEMINFO", tmp_path / "old")
    assert memory.available_bytes() is None


def test_a_capture_needs_more_memory_the_more_rows_it_holds(tmp_path, capture):
    small = tmp_path / "small.h5"
    write_capture(tiny_trace(), small)
    with open_capture(capture) as big, open_capture(small) as little:
        rows = len(load_trace(capture).slices) - len(load_trace(small).slices)
        assert big.memory_need() - little.memory_need() >= rows * 40  # at least the bytes the slices hold


def test_a_capture_too_large_for_the_memory_left_is_refused_before_reading(monkeypatch, tmp_path, capture):
    fake_available(monkeypatch, tmp_path, 1000)

    def must_not_read(*_a):
        raise AssertionError("read although refused")

    monkeypatch.setattr(CaptureFile, "_read_slices", must_not_read)
    with pytest.raises(CaptureError) as e:
        load_trace(capture)
    text = str(e.value)
    assert text.startswith(f"{capture}: needs about ") and "only 1.02 MB is available" in text and "\n" not in text


def test_the_cli_says_one_line_and_exits_2(monkeypatch, tmp_path, capture, capsys):
    fake_available(monkeypatch, tmp_path, 1000)
    assert main(["info", str(capture)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"accelview: {capture}: needs about ") and err.count("\n") == 1
    fake_available(monkeypatch, tmp_path, 64_000_000)  # plenty: the same file loads
    assert main(["info", str(capture)]) == 0


def test_a_json_trace_is_refused_from_its_text_size(monkeypatch, tmp_path):
    path = tmp_path / "t.json"
    export_chrome(busy_trace(), path)
    fake_available(monkeypatch, tmp_path, (memory.BASE_NEED >> 10) + 1)  # the base and one kB: not the text
    with pytest.raises(CaptureError, match=r"t\.json: needs about .* of memory to open, but only"):
        load_trace(path)
    fake_available(monkeypatch, tmp_path, 64_000_000)
    assert len(load_trace(path).slices) > 0


def test_a_gzip_trace_counts_its_decompressed_size(tmp_path):
    text = json.dumps({"traceEvents": [{"name": "x" * 50, "ph": "X", "ts": i, "dur": 1} for i in range(20_000)]})
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text.encode()))
    assert memory.text_size(path) == len(text)
    assert memory.trace_need(path) > memory.JSON_FACTOR * len(text)
    folder = tmp_path / "ranks"
    folder.mkdir()
    (folder / "a.json").write_text(text)
    (folder / "notes.txt").write_text("n" * 1_000_000)  # not a trace: not counted
    assert memory.trace_need(folder) == memory.trace_need(folder / "a.json")


def test_the_app_says_it_in_a_dialog_and_keeps_the_view(monkeypatch, qtbot, tmp_path, capture):
    from timeline_widgets import shown_window

    w = shown_window(qtbot, tmp_path)
    fake_available(monkeypatch, tmp_path, 1000)
    job = w.open_path(str(capture))
    with qtbot.waitSignal(job.finished, timeout=20_000):
        pass
    qtbot.waitUntil(lambda: w.error_box is not None and w.error_box.isVisible(), timeout=10_000)
    assert w.error_box.text().startswith(f"{capture}: needs about ") and w.state.trace is None
    w.error_box.close()


def test_a_cluster_counts_its_hosts_and_their_merge_together(monkeypatch, tmp_path, capsys):
    from accelview.capture.sim import workloads
    from accelview.model.loader import memory_need

    run = tmp_path / "run"
    run.mkdir()
    cluster = workloads.run_cluster("dp-straggler", {"hosts": 2, "devices": 2, "steps": 2}, seed=3)
    for h, t in enumerate(cluster.traces()):
        write_capture(t, run / f"host{h}.h5")
    each = [memory_need(run / f"host{h}.h5") for h in range(2)]
    fake_available(monkeypatch, tmp_path, (max(each) >> 10) + 1024)  # either host alone fits
    assert main(["info", str(run / "host0.h5")]) == 0
    capsys.readouterr()
    assert main(["info", str(run)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"accelview: {run}: needs about ") and err.count("\n") == 1


def test_convert_keeps_what_it_wrote_when_memory_is_short_to_read_it_back(monkeypatch, tmp_path, capsys):
    import accelview.app.cli.convert as convert

    src, out = tmp_path / "t.json", tmp_path / "out.h5"
    export_chrome(busy_trace(), src)

    def short(path):  # the read-back alone finds the memory short
        raise memory.NotEnoughMemory(path, "needs about 1 GB of memory to open, but only 1 MB is available")

    monkeypatch.setattr(convert, "load_trace", short)
    assert main(["convert", str(src), str(out)]) == 2
    assert "could not be read back to check it" in capsys.readouterr().err
    assert len(load_trace(out).slices) == len(load_trace(src).slices)  # kept, and whole
