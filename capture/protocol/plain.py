"""Plain data for the pipe and the spool: msgpack of numbers, strings, lists and maps, and
numeric arrays as (dtype, bytes). Decoding runs no code from the input: msgpack extension
types and non-numeric dtypes are refused (a spool is a file anyone can hand over)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np
from accelview.model.strings import valid_texts

NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats: what a column may hold


class PlainDataError(ValueError):
    """Input that is not plain data (an extension type, an object dtype, a malformed array)."""


def _to_plain(value: Any) -> Any:
    """The encoder's fallback: numpy scalars as Python numbers, anything else as its text
    (what the capture's argument sets make of a value of another type)."""
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def _no_ext(code: int, data: memoryview) -> Any:
    raise PlainDataError(f"msgpack extension type {code} in a capture stream (only plain data is accepted)")


_encoder = msgspec.msgpack.Encoder(enc_hook=_to_plain)
_encode = _encoder.encode


def encode(value: Any) -> bytes:
    """msgpack of plain data. Text UTF-8 cannot hold (a name made by ``os.fsdecode`` of a
    non-UTF-8 file name) goes escaped (:func:`valid_texts`) rather than failing the drain."""
    try:
        return _encode(value)
    except UnicodeEncodeError:
        return _encode(valid_texts(value))


_any = msgspec.msgpack.Decoder(ext_hook=_no_ext)
_strings = msgspec.msgpack.Decoder(list[str], ext_hook=_no_ext)
_raws = msgspec.msgpack.Decoder(list[msgspec.Raw], ext_hook=_no_ext)


def decode(data: bytes | memoryview | np.ndarray) -> Any:
    """Plain data (None, bool, int, float, str, bytes, list, dict) from msgpack bytes."""
    try:
        return _any.decode(_bytes(data))
    except msgspec.DecodeError as e:
        raise PlainDataError(f"not a plain msgpack payload: {e}") from None


def decode_strings(data: bytes | memoryview | np.ndarray) -> list[str]:
    """A list of strings (typed: anything else is refused)."""
    try:
        return _strings.decode(_bytes(data))
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise PlainDataError(f"not a list of strings: {e}") from None


def decode_shared(data: bytes | memoryview | np.ndarray) -> list[Any]:
    """A list whose equal items (a stream's argument dict, sent once per use) come back as one
    object each: only the distinct items are decoded, so consumers that share work by identity
    still do."""
    try:
        raws = _raws.decode(_bytes(data))
    except (msgspec.DecodeError, msgspec.ValidationError) as e:
        raise PlainDataError(f"not a plain msgpack list: {e}") from None
    seen: dict[bytes, Any] = {}
    out = []
    for r in raws:
        key = bytes(r)
        v = seen.get(key, seen)
        if v is seen:
            v = seen[key] = decode(key)
        out.append(v)
    return out


def array(a: np.ndarray | None) -> list[Any] | None:
    """A numeric array as ``[dtype, shape, bytes]`` (None stays None)."""
    if a is None:
        return None
    a = np.ascontiguousarray(a)
    if a.dtype.kind not in NUMERIC_KINDS:
        raise TypeError(f"only numeric arrays go on the wire, not {a.dtype}")
    return [a.dtype.str, list(a.shape), a.tobytes()]


def unarray(value: Any) -> np.ndarray | None:
    """The array :func:`array` encoded (a writable copy); refuses any dtype but numbers."""
    if value is None:
        return None
    try:
        dtype, shape, data = value
        dt = np.dtype(dtype)
    except (TypeError, ValueError) as e:
        raise PlainDataError(f"not an encoded array: {e}") from None
    if dt.kind not in NUMERIC_KINDS or dt.hasobject or not isinstance(data, bytes):
        raise PlainDataError(f"array of dtype {dtype!r} refused (numbers only)")
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if len(data) != n * dt.itemsize:
        raise PlainDataError(f"array of {len(data)} bytes does not hold {shape} items of {dtype}")
    return np.frombuffer(data, dtype=dt).reshape(shape).copy()


def _bytes(data: bytes | memoryview | np.ndarray) -> bytes | memoryview:
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8:
            raise PlainDataError(f"a packed payload must be bytes, not {data.dtype}")
        return memoryview(data)
    return data
