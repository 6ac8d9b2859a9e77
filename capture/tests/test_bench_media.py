"""Bench media flags (image scale, video share) and the TFRecord framing."""
import io
import os

import pytest

from simreplay_capture.bench import tfrecord
from simreplay_capture.bench.dataset import rescale_jpeg, split_share


def test_crc32c_check_value():
    # The CRC-32C check value of the ASCII digits "123456789" (RFC 3720 B.4; Williams' catalogue).
    assert tfrecord.crc32c(b"123456789") == 0xE3069283
    assert tfrecord._crc32c_py(b"123456789") == 0xE3069283


def test_masked_crc_of_empty_payload():
    # crc32c(b"") = 0, so the masked value is the mask delta itself.
    assert tfrecord.masked_crc(b"") == 0xA282EAD8


def test_record_round_trip_and_layout(tmp_path):
    p = tmp_path / "a.tfrecord"
    payloads = [b"", b"x", os.urandom(5000)]
    with open(p, "wb") as f:
        sizes = [tfrecord.write_record(f, b) for b in payloads]
    assert sizes == [16, 17, 5016]  # 8 length + 4 CRC + payload + 4 CRC
    assert os.path.getsize(p) == sum(sizes)
    assert tfrecord.read_all(str(p)) == payloads


def test_corrupt_payload_and_truncation_are_detected(tmp_path):
    buf = io.BytesIO()
    tfrecord.write_record(buf, b"hello world")
    raw = bytearray(buf.getvalue())
    raw[14] ^= 1
    with pytest.raises(ValueError, match="data CRC"):
        tfrecord.read_record(io.BytesIO(bytes(raw)))
    with pytest.raises(ValueError, match="truncated"):
        tfrecord.read_record(io.BytesIO(buf.getvalue()[:20]))
    raw = bytearray(buf.getvalue())
    raw[0] ^= 1
    with pytest.raises(ValueError, match="length CRC"):
        tfrecord.read_record(io.BytesIO(bytes(raw)))


def test_split_share():
    assert split_share(240, 0.1) == (216, 24)
    assert split_share(10, 0.0) == (10, 0)
    with pytest.raises(ValueError):
        split_share(10, 1.5)


def test_rescale_jpeg_halves_each_side():
    from PIL import Image
    im = Image.new("RGB", (200, 100), (120, 30, 200))
    buf = io.BytesIO()
    im.save(buf, format="JPEG")
    out = rescale_jpeg(buf.getvalue(), 0.5)
    with Image.open(io.BytesIO(out)) as r:
        assert r.size == (100, 50)
