"""The capture service: runs the profiled child and owns the capture file.

Perfetto's producer/service split: the child only produces frames (:mod:`.child`); this
process reads them from a pipe, appends them to a :class:`CaptureWriter` (which flushes
every ``FLUSH_ROWS`` rows and at least once a second, so its memory stays bounded however
long the run) and, whatever happens to the child — it finishes, raises, exits non-zero, is
killed — closes a valid capture with everything received. Anything but a clean exit marks
it incomplete with the reason. Cancelling, or a time or size limit, asks the child to stop
(SIGTERM: it still sends what it recorded) and kills it if it has not gone in ``grace_s``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accelview.model.errors import CaptureError
from accelview.model.store.reader import open_capture
from accelview.model.store.writer import CaptureWriter

from ..protocol import wire
from ..protocol.config import CaptureConfig
from ..protocol.wire import FrameReader
from .collector import RecordSink
from .ingest import Ingest
from .spool import CutFrame, Spool, file_size, replay, spool_of, staging_of

PIPE_BYTES = 1 << 20  # pipe buffer asked of Linux (F_SETPIPE_SZ; the default 64 KiB stalls the child)
MAX_BUFFERED = 16 << 20  # bytes read from the child and not yet converted, at most
FLUSH_ROWS = 1 << 16  # rows the writer holds before it appends them to the file
REPORT_S = 0.1  # seconds between two progress reports
MIN_FREE_BYTES = 16 << 20  # free disk a capture needs to start
# Converting needs room: the staged rows, the sort's scratch runs and the final file took 5.4 times
# the spool's size at their peak (beside the spool itself), so the capture stops while that is left
ROOM_PER_SPOOL_BYTE = 6
DISK_CHECK_S = 0.2  # seconds between two looks at the disk's free space
BEHIND_BYTES = MAX_BUFFERED // 4  # a backlog the progress line mentions (~1.5 MB comes and goes when it keeps up)


@dataclass
class Progress:
    """Where a running capture stands."""

    elapsed_s: float = 0.0
    events: int = 0
    bytes_received: int = 0
    bytes_written: int = 0
    dropped: int = 0
    # converting while the script runs: read from the child and not converted yet, the service
    # is behind the script (at MAX_BUFFERED the script waits for it)
    backlog_bytes: int = 0
    # "recording" while the script runs; "converting" the spooled records once it has ended
    phase: str = "recording"
    converted_bytes: int = 0

    def describe(self) -> str:
        """One line: elapsed, events, MB written, and how far behind the service is, when it is
        (converting after the script: how far the conversion is)."""
        if self.phase == "converting":
            done = self.converted_bytes / self.bytes_received if self.bytes_received else 1.0
            return f"{self.elapsed_s:.1f} s, converting the records: {done:.0%} ({self.events:,} events so far)"
        text = f"{self.elapsed_s:.1f} s, {self.events:,} events, {self.bytes_written / 1e6:.1f} MB written"
        if self.backlog_bytes >= BEHIND_BYTES:
            text += f", {self.backlog_bytes / 1e6:.1f} MB still to convert"
        return text


@dataclass
class ProfileResult:
    """How a capture ended."""

    path: Path
    exit_code: int
    complete: bool
    reason: str
    progress: Progress = field(default_factory=Progress)
    dropped: dict[str, int] = field(default_factory=dict)


class _PipeReader:
    """Reads the child's pipe on a thread into a queue of byte chunks, holding at most
    ``MAX_BUFFERED`` bytes the service has not converted yet (then the child waits, as it would
    on a full pipe): the service's work on a frame never stalls the profiled program."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.queue: queue.Queue[bytes | None] = queue.Queue()
        self.buffered = 0
        self._room = threading.Condition()
        self._closed = False
        self.thread = threading.Thread(target=self._run, name="accelview pipe reader", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            while True:
                with self._room:
                    while self.buffered > MAX_BUFFERED and not self._closed:
                        self._room.wait(0.1)
                    if self._closed:
                        return
                data = os.read(self.fd, 1 << 20)
                if not data:
                    return
                with self._room:
                    self.buffered += len(data)
                self.queue.put(data)
        except OSError:
            return
        finally:
            self.queue.put(None)

    def get(self, timeout: float) -> bytes | None:
        """The next chunk (b"" when none came within ``timeout``), or None at the end of the stream."""
        try:
            data = self.queue.get(timeout=timeout)
        except queue.Empty:
            return b""
        if data:
            with self._room:
                self.buffered -= len(data)
                self._room.notify()
        return data

    def close(self) -> None:
        """Stop reading and close the pipe."""
        with self._room:
            self._closed = True
            self._room.notify()
        self.thread.join(timeout=1.0)
        os.close(self.fd)


class OutputTail:
    """Drains a child's stdout and stderr on a thread, keeping only the last ``limit`` bytes: a
    script that prints without end never blocks on a pipe nobody reads, nor fills memory."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.data = bytearray()
        self.total = 0
        self.thread = threading.Thread(target=self._run, name="accelview script output", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        with contextlib.suppress(OSError):
            while chunk := os.read(self.fd, 1 << 16):
                self.total += len(chunk)
                self.data += chunk
                if len(self.data) > 2 * self.limit:
                    del self.data[:-self.limit]
        with contextlib.suppress(OSError):
            os.close(self.fd)

    def text(self) -> str:
        """The last ``limit`` bytes printed, as text (a line cut at the start is dropped)."""
        tail = bytes(self.data[-self.limit:])
        if self.total > len(tail):
            tail = tail.partition(b"\n")[2]
        return tail.decode("utf-8", "replace")


def child_command(config: CaptureConfig, fd: int, script: Sequence[str] = (), workload: str | None = None,
                  params: Sequence[str] = ()) -> list[str]:
    """The command line of the profiled child."""
    cmd = [sys.executable, "-m", "accelview.capture.tracer.child", "--fd", str(fd), "--config", config.to_json()]
    if workload is not None:
        return [*cmd, "--workload", workload, "--", *params]
    return [*cmd, "--", *script]


class CaptureService:
    """One capture: ``run()`` blocks until the child has gone and the file is closed.

    ``script``: the script and its arguments, or ``workload`` with ``params`` (``KEY=VALUE``).
    ``on_progress`` is called about ten times a second (from the thread that runs ``run``);
    ``cancel()`` may be called from any thread.
    """

    def __init__(self, config: CaptureConfig, script: Sequence[str] = (), workload: str | None = None,
                 params: Sequence[str] = (), on_progress: Callable[[Progress], None] | None = None,
                 grace_s: float = 5.0, stdin: int | None = None, output_tail: int = 0) -> None:
        if not script and workload is None:
            raise ValueError("nothing to profile: give a script or a workload")
        self.config, self.script, self.workload, self.params = config, list(script), workload, list(params)
        self.on_progress = on_progress
        self.grace_s = grace_s
        self.stdin = stdin
        # > 0: the script's stdout and stderr are read (its last output_tail bytes kept in
        # ``output``), for a caller with no terminal to pass on (the app's dialog)
        self.output_tail = output_tail
        self.output: OutputTail | None = None
        self._cancel = threading.Event()
        self.progress = Progress()
        self._t0 = time.monotonic()
        self._events = 0  # while spooling: events received so far

    def cancel(self) -> None:
        """Stop the run; what was captured so far is kept (the capture is marked incomplete)."""
        self._cancel.set()

    def run(self) -> ProfileResult:
        """Run the child, stream its records into the file (or spool them and convert them once it
        has ended), close it; returns how it ended."""
        cfg = self.config
        about = {"service_pid": os.getpid()}
        check_output_folder(Path(cfg.output))
        left = spool_of(Path(cfg.output))
        if left.exists() and not cfg.overwrite:
            raise CaptureError(cfg.output, f"{left} holds the records of a profile run that was killed before "
                                           f"converting them (accelview convert {left} {cfg.output} --force); "
                                           "use --force to overwrite both")
        left.unlink(missing_ok=True)  # overwritten, as the capture is
        # Every mode spools what the child sends (appended as it comes: a kill cannot tear what is
        # already there), and the rows are staged beside the output, which holds a placeholder
        # naming the spool until the final file replaces it whole: a kill at any instant leaves
        # the placeholder and the whole spool (`accelview convert` makes the capture of it), or
        # the finished capture.
        about["spool"] = left.name
        staging = staging_of(Path(cfg.output))
        staging.unlink(missing_ok=True)  # a killed run's
        writer = CaptureWriter(cfg.output, overwrite=cfg.overwrite, metadata={"capture": about}, flush_rows=FLUSH_ROWS,
                               staging=staging)
        ingest = Ingest(writer)
        sink = RecordSink(ingest.handle)
        spool = Spool(left)
        later = None if cfg.live else spool  # the spool converted once the script has ended (not --live)
        reader = FrameReader(columns=later is None)  # converting later: only each frame's JSON, for the progress
        r, w = os.pipe()
        with contextlib.suppress(OSError, AttributeError):  # a deeper pipe: the child rarely waits for a flush
            fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        out_r, out_w = os.pipe() if self.output_tail > 0 else (None, None)
        try:
            proc = subprocess.Popen(child_command(cfg, w, self.script, self.workload, self.params), pass_fds=(w,),
                                    stdin=self.stdin, stdout=out_w, stderr=out_w)
        except BaseException:
            os.close(r)
            os.close(w)
            for fd in (out_r, out_w):
                if fd is not None:
                    os.close(fd)
            writer.close(False, "the profiled process could not be started")
            spool.remove()
            raise
        os.close(w)
        if out_r is not None and out_w is not None:
            os.close(out_w)
            self.output = OutputTail(out_r, self.output_tail)
        self._t0 = t0 = time.monotonic()
        stop_reason, stop_at, last_flush, last_report, last_disk = "", 0.0, t0, 0.0, 0.0
        spool_full = ""  # why the spool could not be written (then nothing more is)
        cut = CutFrame(spool, 0, 0)  # once the spool cannot be written: the rest of the frame it ends inside
        pipe = _PipeReader(r)  # empties the pipe as fast as the child fills it: the child never waits for us
        try:
            while True:
                data = pipe.get(0.1)
                if data is None:
                    break
                if not spool_full:
                    before, begun = spool.size, reader.pending  # the reader has had what the spool holds:
                    # a frame begins at before - begun
                    try:
                        spool.write(data)
                    except OSError as e:  # the disk filled faster than the check below saw: stop there
                        spool_full = f"the disk is full ({e.strerror or e}; what arrived after that is lost)"
                        # but the frame the spool ends inside is finished in memory, to be converted
                        cut = CutFrame(spool, before - begun, MAX_BUFFERED)
                        cut.add(data[spool.size - before:])
                elif later is not None:
                    cut.add(data)
                if later is not None:
                    for kind, meta, _ in reader.feed(data):
                        self._count(kind, meta)
                else:
                    for kind, meta, cols in reader.feed(data):
                        sink.handle(kind, meta, cols)
                now = time.monotonic()
                if not stop_reason and now - last_disk >= DISK_CHECK_S:
                    last_disk = now
                    stop_reason = spool_full or self._disk_room(spool)
                    if stop_reason:
                        stop_at = now
                        _signal(proc, signal.SIGTERM)
                if not stop_reason:
                    stop_reason = self._should_stop(now - t0, reader.bytes)
                    if stop_reason:
                        stop_at = now
                        _signal(proc, signal.SIGTERM)
                elif now - stop_at > self.grace_s:
                    _signal(proc, signal.SIGKILL)
                if now - last_flush >= 1.0 and later is None:
                    writer.flush()
                    last_flush = now
                if now - last_report >= REPORT_S:
                    last_report = now
                    self._report(ingest, reader.bytes, writer, later, pipe.buffered)
            rc = proc.wait()
            stream = reader
            if later is None:
                for kind, meta, cols in reader.feed(b"", final=True):  # frames after a damaged one cut short
                    sink.handle(kind, meta, cols)
            else:
                stream, stopped = self._convert(spool, sink, ingest, writer, cut.tail)
                if stopped:
                    stop_reason = stopped if not stop_reason else f"{stop_reason}; {stopped}"
            torn = stream.pending
        except (OSError, CaptureError) as e:  # the capture cannot be written (a full disk)
            _signal(proc, signal.SIGKILL)
            proc.wait()
            raise self._unwritable(e, writer, spool) from None
        except BaseException as e:
            _signal(proc, signal.SIGKILL)
            proc.wait()
            reason = f"the capture service stopped ({type(e).__name__})"
            spool.file.close()  # kept: what the child sent, to convert once what stopped us is fixed
            reason += (f"; what the script sent is in {spool.path}: "
                       f"accelview convert {spool.path} {writer.path} --force")
            with contextlib.suppress(Exception):  # the placeholder names the spool if this fails too
                ingest.close(False, reason)
            raise
        finally:
            pipe.close()
        exit_code = rc if rc >= 0 else 128 - rc
        complete, reason = self._outcome(rc, stop_reason, ingest, torn)
        counts, damage = _damage(stream, sink)
        if damage:
            complete, reason = False, f"{reason}; {damage}" if reason else damage
        # the spool goes once all of it is in the capture; a conversion stopped early or that
        # skipped damaged frames keeps it (convert it again, or look at it)
        keep = (later is not None and spool.read < spool.size) or bool(counts)
        if keep:
            reason += (f"; all the records are still in {spool.path}: "
                       f"accelview convert {spool.path} {writer.path} --force")
        self._report(ingest, reader.bytes, writer, later)  # a stopped conversion: how far it got
        if not keep:
            writer.builder.metadata["capture"].pop("spool", None)  # converted: nothing is left in it
        ended: dict[str, Any] = {"exit_code": exit_code, **counts}
        if not cfg.deterministic:  # a deterministic capture holds nothing that depends on when it ran
            ended["wall_s"] = round(time.monotonic() - t0, 3)
        try:
            ingest.close(complete, reason, ended)
        except (OSError, CaptureError) as e:
            raise self._unwritable(e, writer, spool) from None
        spool.file.close()
        if not keep:  # only now: until the final file is in place, the spool is what a kill leaves
            spool.remove()
        self.progress.bytes_written = file_size(writer.path)  # the final file (no callback: the run is over)
        return ProfileResult(writer.path, exit_code, complete, reason, self.progress, ingest.dropped)

    @staticmethod
    def _unwritable(e: BaseException, writer: CaptureWriter, spool: Spool) -> CaptureError:
        """The capture could not be written (a full disk, say): the staged file goes (room for
        what comes next), the placeholder and the spool stay; the error says where the records
        are and how to make the capture of them once there is room."""
        writer.discard()
        spool.file.close()
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        if isinstance(e, CaptureError):
            why = why.removeprefix(f"{writer.path}: ")
        told = re.search(r"error message = '([^']*)'", why)  # HDF5's many lines around the OS's words
        why = told.group(1) if told else why.strip().splitlines()[0][:200]
        return CaptureError(writer.path, f"could not be written ({why}); what the script sent is in {spool.path}: "
                                         f"once there is room, accelview convert {spool.path} {writer.path} --force")

    def _disk_room(self, spool: Spool) -> str:
        """Why to stop while converting what was recorded still fits on the disk ("" while it does)."""
        try:
            free = shutil.disk_usage(spool.path.parent).free
        except OSError:
            return ""
        if free >= ROOM_PER_SPOOL_BYTE * spool.size + MIN_FREE_BYTES // 2:
            return ""
        return (f"the disk is almost full ({free / 1e6:.1f} MB left in {spool.path.parent}): stopped so that "
                f"what was recorded can still be converted")

    def _count(self, kind: bytes, meta: Mapping[str, Any]) -> None:
        """While spooling: the events a frame brings (a frame of records counts its own; a producer
        of rows sends running totals)."""
        if kind == wire.RECORDS:
            self._events += int(meta.get("events", 0))
        elif kind == wire.STATS:
            self._events = int(meta.get("events", self._events))

    def _convert(self, spool: Spool, sink: RecordSink, ingest: Ingest, writer: CaptureWriter, tail: bytes = b""
                 ) -> tuple[FrameReader, str]:
        """Convert the spooled stream into the capture, chunk by chunk (memory stays what one chunk
        needs), then ``tail``: the rest of a frame the spool ends inside (:class:`.spool.CutFrame`).
        Returns the reader (its ``pending``: the bytes of a last frame cut short), and why the
        conversion stopped early: cancelling now stops it (cancelling the script before did not:
        its records are converted), keeping what was converted."""
        self._cancel.clear()
        self.progress.phase = "converting"
        marks = [time.monotonic(), 0.0]  # last flush, last report

        def after_chunk() -> bool:
            if self._cancel.is_set():
                return True
            now = time.monotonic()
            if now - marks[0] >= 1.0:
                writer.flush()
                marks[0] = now
            if now - marks[1] >= REPORT_S:
                marks[1] = now
                self._report(ingest, spool.size, writer, spool)
            return False

        reader = replay(spool, sink, after_chunk, tail=tail)
        if self._cancel.is_set() and spool.read < spool.size:
            left = spool.size - spool.read
            return reader, f"cancelled while converting ({left / 1e6:.1f} MB of records not converted)"
        return reader, ""

    def _should_stop(self, elapsed: float, received: int) -> str:
        cfg = self.config
        if self._cancel.is_set():
            return "cancelled"
        if cfg.max_seconds and elapsed >= cfg.max_seconds:
            return f"time limit reached ({cfg.max_seconds:g} s)"
        if cfg.max_bytes and received >= cfg.max_bytes:
            return f"size limit reached ({cfg.max_bytes} B received)"
        return ""

    @staticmethod
    def _outcome(rc: int, stop_reason: str, ingest: Ingest, torn: int) -> tuple[bool, str]:
        if stop_reason:
            return False, stop_reason
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"signal {-rc}"
            lost = f"; {torn} B of its last, unfinished batch were lost" if torn else ""
            return False, f"the profiled process was killed by {name}{lost}"
        end = ingest.end
        if end is None:
            return False, f"the profiled process exited (status {rc}) before it finished the capture"
        if end.get("exit_code", rc) != 0:
            error = end.get("error") or ""
            return False, f"the script exited with status {end['exit_code']}" + (f" ({error})" if error else "")
        return True, ""

    def _report(self, ingest: Ingest, received: int, writer: CaptureWriter, spool: Spool | None = None,
                backlog: int = 0) -> None:
        p = self.progress
        p.backlog_bytes = backlog
        p.elapsed_s, p.bytes_received = time.monotonic() - self._t0, received
        if spool is None or p.phase == "converting":
            p.events = int(ingest.stats.get("events", 0))
            p.bytes_written = file_size(writer.staged_path)
        else:
            p.events, p.bytes_written = self._events, spool.size
        p.converted_bytes = spool.read if spool is not None else received
        p.dropped = sum(ingest.dropped.values())
        if self.on_progress:
            self.on_progress(p)


def check_output_folder(out: Path, need: int = MIN_FREE_BYTES) -> None:
    """Refuse, before anything runs, an output whose folder is missing, cannot be written, or sits
    on a disk with less than ``need`` bytes free (CaptureError naming the output)."""
    folder = out.parent
    if not folder.is_dir():
        raise CaptureError(out, f"{folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise CaptureError(out, f"cannot write in {folder}: permission denied or a read-only file system")
    free = shutil.disk_usage(folder).free
    if free < need:
        raise CaptureError(out, f"the disk is full: {free / 1e6:.1f} MB free in {folder}, a capture needs at least "
                                f"{need / 1e6:.0f} MB to start")


def convert_spool(spool: Path, output: Path, overwrite: bool = False) -> ProfileResult:
    """Convert a spool its capture service left unconverted (it was killed) into ``output``,
    marked incomplete; the spool is removed once the capture is closed. Raises
    :class:`CaptureError` for a file that is not a spool."""
    try:
        source = Spool(spool, existing=True)
    except OSError as e:
        raise CaptureError(spool, f"cannot read: {e.strerror or e}") from None
    try:
        source.check()
        # the output holds a placeholder naming the spool until the capture replaces it whole
        beside = spool.resolve().parent == Path(output).resolve().parent
        staging = staging_of(Path(output))
        staging.unlink(missing_ok=True)  # a killed conversion's
        writer = CaptureWriter(output, overwrite=overwrite, flush_rows=FLUSH_ROWS, staging=staging,
                               metadata={"capture": {"spool": spool.name}} if beside else None)
        ingest = Ingest(writer)
        sink = RecordSink(ingest.handle)
        reader = FrameReader()
        replay(source, sink, reader=reader)
        reason = "recovered from the spool of a capture service that stopped before converting it"
        end = ingest.end
        if end is not None:
            reason += f"; the script had exited with status {end.get('exit_code')}"
        elif reader.pending:
            reason += f"; {reader.pending} B of a last, unfinished batch were lost"
        counts, damage = _damage(reader, sink)
        if damage:  # the spool stays: not all of it is in the capture
            reason += f"; {damage}; the spool {spool} is kept"
        exit_code = int(end.get("exit_code", -1)) if end is not None else -1
        ingest.close(False, reason, {"recovered_from": spool.name, **counts})
        with open_capture(writer.path):  # never a success for a file that cannot be read back
            pass
    finally:
        source.file.close()
    if not counts:  # all of it is in a capture that reads back: only now is the spool not needed
        spool.unlink(missing_ok=True)
    progress = Progress(events=int(ingest.stats.get("events", 0)), bytes_received=source.size,
                        bytes_written=file_size(writer.path), dropped=sum(ingest.dropped.values()))
    return ProfileResult(writer.path, exit_code, False, reason, progress, ingest.dropped)


def _damage(reader: FrameReader, sink: RecordSink) -> tuple[dict[str, int], str]:
    """What a conversion skipped as damaged: the counts the capture's metadata keeps
    (``damaged_frames``, ``damaged_bytes``; none when nothing was) and the words of its reason."""
    words = []
    if reader.damaged:
        words.append(f"skipped {reader.damaged} damaged part(s) of the stream ({reader.skipped_bytes:,} B: "
                     f"{reader.problems[0]})")
    if sink.lost_frames:
        words.append(f"the service could not convert {sink.lost_frames} frame(s) ({sink.error})")
    if not words:
        return {}, ""
    counts = {"damaged_frames": reader.damaged + sink.lost_frames, "damaged_bytes": reader.skipped_bytes}
    return counts, "; ".join(words)


def _signal(proc: subprocess.Popen, sig: int) -> None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(sig)
