"""Host and device buffers: what the runtime API copies between and passes to ops.

Buffers carry shape, dtype and size, not data: a simulated 16 GB weight upload allocates
nothing on the host. Device buffers take HBM capacity from their device until freed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..device.ops import DTYPE_BYTES

if TYPE_CHECKING:
    from .simulator import Device


def dtype_size(dtype: Any) -> tuple[str, int]:
    """(name, bytes per element) of a dtype given as a name ('bf16', 'fp8', ...) or numpy dtype."""
    if isinstance(dtype, str) and dtype in DTYPE_BYTES:
        return dtype, DTYPE_BYTES[dtype]
    try:
        np_dtype = np.dtype(dtype)
    except TypeError:
        known = ", ".join(DTYPE_BYTES)
        raise ValueError(f"unknown dtype {dtype!r}; use one of {known} or a numpy dtype") from None
    return np_dtype.name, np_dtype.itemsize


def _shape(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    dims = (shape,) if isinstance(shape, int | np.integer) else tuple(shape)
    if any(int(d) < 0 for d in dims):
        raise ValueError(f"shape dimensions must be >= 0, got {dims}")
    return tuple(int(d) for d in dims)


@dataclass(eq=False)
class HostBuffer:
    """Host memory: pinned (page-locked, DMA'd directly) or pageable (staged through bounce buffers)."""

    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    pinned: bool = True

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return math.prod(self.shape) * self.itemsize

    def __repr__(self) -> str:
        kind = "pinned" if self.pinned else "pageable"
        return f"HostBuffer({self.shape}, {self.dtype}, {kind}, {self.nbytes} B)"


@dataclass(eq=False)
class DeviceBuffer:
    """A region of one device's HBM."""

    device: Device
    shape: tuple[int, ...]
    dtype: str
    itemsize: int
    address: int
    freed: bool = False

    @property
    def nbytes(self) -> int:
        """Size in bytes."""
        return math.prod(self.shape) * self.itemsize

    def __repr__(self) -> str:
        return f"DeviceBuffer(device {self.device.index}, {self.shape}, {self.dtype}, {self.nbytes} B)"


def host_buffer(shape: int | tuple[int, ...], dtype: Any = "bf16", pinned: bool = True) -> HostBuffer:
    """A host buffer of ``shape`` and ``dtype``; ``pinned=False`` for ordinary pageable memory."""
    name, size = dtype_size(dtype)
    return HostBuffer(_shape(shape), name, size, bool(pinned))


def device_buffer(device: Device, shape: int | tuple[int, ...], dtype: Any, address: int) -> DeviceBuffer:
    """A device buffer record (the device does the accounting)."""
    name, size = dtype_size(dtype)
    return DeviceBuffer(device, _shape(shape), name, size, address)
