"""TFRecord framing (the format TensorFlow's TFRecordWriter writes, tensorflow/core/lib/io/record_writer.cc
and the tf.data guide "TFRecord and tf.train.Example"): each record is

    uint64 length            little-endian, payload bytes
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

with CRC-32C (Castagnoli, polynomial 0x1EDC6F41 reflected) masked as ((crc >> 15) | (crc << 17)) +
0xA282EAD8 mod 2^32. The bench's payload is the sample's media bytes as they are (no tf.train.Example
protobuf around them). CRC-32C uses python3-crcmod's C extension when present, else a table-driven
pure-Python fallback (correct, about 100x slower).
"""
from __future__ import annotations

import struct
from typing import BinaryIO, Callable, List, Optional

_MASK_DELTA = 0xA282EAD8


def _table() -> List[int]:
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


def _crc32c_py(data: bytes) -> int:
    t = _TABLE
    c = 0xFFFFFFFF
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def _pick() -> Callable[[bytes], int]:
    try:
        import crcmod.predefined
        return crcmod.predefined.mkCrcFun("crc-32c")
    except ImportError:
        return _crc32c_py


_TABLE = _table()
crc32c: Callable[[bytes], int] = _pick()


def masked_crc(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def write_record(f: BinaryIO, payload: bytes) -> int:
    """Appends one record; returns the bytes written (payload + 16)."""
    header = struct.pack("<Q", len(payload))
    f.write(header)
    f.write(struct.pack("<I", masked_crc(header)))
    f.write(payload)
    f.write(struct.pack("<I", masked_crc(payload)))
    return len(payload) + 16


def read_record(f: BinaryIO, where: str = "tfrecord") -> Optional[bytes]:
    """Reads the record at the file position; None at a clean end of file. Raises ValueError on a
    truncated record or a CRC mismatch (as TensorFlow's reader does: DataLossError)."""
    header = f.read(12)
    if not header:
        return None
    if len(header) < 12:
        raise ValueError(f"{where}: truncated record header ({len(header)} of 12 bytes)")
    (length,) = struct.unpack("<Q", header[:8])
    (hcrc,) = struct.unpack("<I", header[8:])
    if hcrc != masked_crc(header[:8]):
        raise ValueError(f"{where}: length CRC mismatch")
    body = f.read(length + 4)
    if len(body) < length + 4:
        raise ValueError(f"{where}: truncated record ({len(body)} of {length + 4} bytes)")
    payload = body[:length]
    (dcrc,) = struct.unpack("<I", body[length:])
    if dcrc != masked_crc(payload):
        raise ValueError(f"{where}: data CRC mismatch")
    return payload


def read_all(path: str) -> List[bytes]:
    out = []
    with open(path, "rb") as f:
        while True:
            r = read_record(f, path)
            if r is None:
                return out
            out.append(r)
