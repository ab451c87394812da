"""Device.copy: host<->device and device<->device copies through the driver and DMA engines.

Pinned host memory is one DMA command. Pageable memory is staged through
``host.staging_buffers`` pinned bounce buffers of ``host.staging_buffer_bytes``, chunk by
chunk, with the host thread doing the memcpy (a visible slice inside the API call):

- H2D: memcpy chunk i into a free bounce buffer, submit its DMA; a buffer is free again
  once its DMA has finished. The call returns once the last chunk is staged.
- D2H: submit DMAs into the free buffers; when chunk i's DMA completes (and the host has
  taken the interrupt) memcpy it out and resubmit the buffer. Returns when complete.

This is the same schedule as :func:`.transfer.plan_transfer`, run through the device's
queues so that it also waits for earlier work on the stream and shares the link.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..device.command import Command
from ..device.hbm import SEQUENTIAL, efficiency
from .buffers import DeviceBuffer, HostBuffer

if TYPE_CHECKING:
    from .simulator import Device, Stream


def _direction(dst: HostBuffer | DeviceBuffer, src: HostBuffer | DeviceBuffer, device: Device,
               nbytes: int) -> str:
    if isinstance(src, HostBuffer) and isinstance(dst, DeviceBuffer):
        direction, dev_buf = "h2d", dst
    elif isinstance(src, DeviceBuffer) and isinstance(dst, HostBuffer):
        direction, dev_buf = "d2h", src
    elif isinstance(src, DeviceBuffer) and isinstance(dst, DeviceBuffer):
        if src.device is not dst.device:
            raise ValueError("copy: device-to-device copies between devices are not simulated yet")
        direction, dev_buf = "d2d", src
    else:
        raise ValueError("copy: one side must be a device buffer (host-to-host copies are plain memcpy)")
    if dev_buf.device is not device:
        raise ValueError(f"copy: the device buffer lives on device {dev_buf.device.index}, "
                         f"not {device.index}")
    if nbytes < 0 or nbytes > src.nbytes or nbytes > dst.nbytes:
        raise ValueError(f"copy: cannot copy {nbytes} B from a {src.nbytes} B source into a {dst.nbytes} B "
                         "destination")
    for buf in (dst, src):
        if isinstance(buf, DeviceBuffer) and buf.freed:
            raise ValueError("copy: a device buffer was used after free()")
    return direction


def copy(device: Device, dst: HostBuffer | DeviceBuffer, src: HostBuffer | DeviceBuffer,
         stream: Stream | None, nbytes: int | None = None) -> None:
    """Implementation of :meth:`Device.copy`."""
    nbytes = src.nbytes if nbytes is None else int(nbytes)
    direction = _direction(dst, src, device, nbytes)
    host = src if isinstance(src, HostBuffer) else dst
    pinned = not isinstance(host, HostBuffer) or host.pinned
    sim, spec = device.sim, device.spec
    clock = sim.clock
    st = stream or device.default_stream
    cid = sim.next_cid()
    start = clock.enter_call()
    clock.spend(spec.host.copy_api_ns)
    name = f"{direction.upper()} {nbytes} B"
    if direction == "d2d":
        eff = efficiency(spec, SEQUENTIAL)
        fixed = spec.timing.op_launch_ns + 2 * nbytes / (spec.hbm_bytes_per_s * eff) * 1e9
        last = device.enqueue("copy", st, name, cid, direction="d2d", fixed_ns=fixed, args={"bytes": nbytes})
    elif pinned:
        last = device.enqueue("copy", st, name, cid, direction=direction,
                              job=device.engine.dma_job(nbytes, direction), args={"bytes": nbytes, "pinned": 1})
    elif direction == "h2d":
        last = _pageable_h2d(device, st, cid, nbytes, name)
    else:
        last = _pageable_d2h(device, st, cid, nbytes, name)
    if stream is None or (not pinned and direction == "d2h"):
        blocked = clock.now
        clock.wait_until(device.engine.run_until(last) + spec.timing.interrupt_ns)
        sim.log.wait(blocked, clock.now)
        device.engine.advance(clock.now)
    sim.log.call(start, clock.now, "copy", cid, direction=direction, bytes=nbytes, pinned=int(pinned),
                 stream=st.index, synchronous=int(stream is None))
    clock.exit_call()


def _chunks(device: Device, nbytes: int) -> list[int]:
    step = device.spec.host.staging_buffer_bytes
    return [min(step, nbytes - off) for off in range(0, nbytes, step)] or [0]


def _memcpy(device: Device, cid: int, size: int, chunk: int, direction: str) -> None:
    clock = device.sim.clock
    t0 = clock.now
    clock.spend(size / device.spec.host.memcpy_gb_per_s)
    device.sim.log.memcpy(t0, clock.now, cid, size, chunk, direction)


def _wait_for(device: Device, cmd: Command, notify_ns: float = 0.0) -> None:
    clock = device.sim.clock
    blocked = clock.now
    clock.wait_until(device.engine.run_until(cmd) + notify_ns)
    device.sim.log.wait(blocked, clock.now)
    device.engine.advance(clock.now)


def _pageable_h2d(device: Device, st: Stream, cid: int, nbytes: int, name: str) -> Command:
    nbuf = device.spec.host.staging_buffers
    cmds: list[Command] = []
    for i, size in enumerate(_chunks(device, nbytes)):
        if i >= nbuf:
            _wait_for(device, cmds[i - nbuf])  # the bounce buffer is free once its DMA is done
        _memcpy(device, cid, size, i, "h2d")
        cmds.append(device.enqueue("copy", st, name, cid, chunk=i, direction="h2d",
                                   job=device.engine.dma_job(size, "h2d"),
                                   args={"bytes": size, "pinned": 0, "chunk": i}))
    return cmds[-1]


def _pageable_d2h(device: Device, st: Stream, cid: int, nbytes: int, name: str) -> Command:
    spec, nbuf = device.spec, device.spec.host.staging_buffers
    sizes = _chunks(device, nbytes)

    def submit(i: int) -> Command:
        return device.enqueue("copy", st, name, cid, chunk=i, direction="d2h",
                              job=device.engine.dma_job(sizes[i], "d2h"),
                              args={"bytes": sizes[i], "pinned": 0, "chunk": i})

    cmds = [submit(i) for i in range(min(nbuf, len(sizes)))]
    for i, size in enumerate(sizes):
        _wait_for(device, cmds[i], spec.timing.interrupt_ns)
        _memcpy(device, cid, size, i, "d2h")
        if i + nbuf < len(sizes):
            cmds.append(submit(i + nbuf))
    return cmds[-1]
