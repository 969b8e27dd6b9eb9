"""Tensors of a ``.safetensors`` file mapped read-only from disk instead of copied into memory.

A model's embedding matrix then costs no private memory: its pages are the file's, read on
first use, shared by every process that maps the same file (a server's workers), and given
back to the page cache under memory pressure. The format is an 8-byte little-endian header
length, a JSON header naming each tensor's dtype, shape and byte range, then the data.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np

_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
}


class MappingError(ValueError):
    """The file is not a safetensors file this module can map."""


def map_tensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of ``path`` as a read-only array over the file's pages."""
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) != 8:
            raise MappingError(f"{path}: too short for a safetensors header")
        (size,) = struct.unpack("<Q", head)
        try:
            header = json.loads(fh.read(size))
        except ValueError as exc:
            raise MappingError(f"{path}: the safetensors header is not JSON ({exc})") from exc
    start = 8 + size
    out: dict[str, np.ndarray] = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise MappingError(f"{path}: tensor {name!r} has dtype {spec['dtype']}, not mappable")
        begin, end = spec["data_offsets"]
        shape = tuple(int(n) for n in spec["shape"])
        if end - begin != int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize:
            raise MappingError(f"{path}: tensor {name!r} does not fill its byte range")
        if end == begin:
            out[name] = np.zeros(shape, dtype=dtype)
            continue
        out[name] = np.memmap(path, dtype=dtype, mode="r", offset=start + begin, shape=shape)
    return out
