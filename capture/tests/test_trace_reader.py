"""The Python reader follows the spec's validation rules."""
import gzip
import json

import pytest

from simreplay_capture.trace import TraceError, read_trace
from simreplay_capture.manifest import rank_path

HDR = {"type": "header", "schema": "simreplay.trace/1", "manifest": {}}
STEP = {"type": "step", "rank": 0, "step": 0, "t_start_ns": 5, "compute_ns": 10, "comm_ns": 0,
        "step_ns": 12, "micro_batches": 1}


def _write(path, lines, gz=False):
    text = "".join(l if isinstance(l, str) else json.dumps(l) + "\n" for l in lines)
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        with open(path, "w") as f:
            f.write(text)
    return str(path)


def test_valid_and_unknown_type(tmp_path):
    p = _write(tmp_path / "a.jsonl", [HDR, STEP, {"type": "mystery", "x": 1}, {"type": "mystery"}])
    with pytest.warns(UserWarning, match="unknown record type 'mystery'"):
        t = read_trace(p)
    assert len(t.of("step")) == 1 and len(t.records) == 1
    assert sum("mystery" in w for w in t.warnings) == 1


@pytest.mark.parametrize("bad,msg", [
    ({**STEP, "compute_ns": -1}, "negative"),
    ({**STEP, "step_ns": "12"}, "must be an integer"),
    ({**STEP, "step_ns": 1.5}, "must be an integer"),
    ({k: v for k, v in STEP.items() if k != "comm_ns"}, "missing required field 'comm_ns'"),
    ({**STEP, "extra": 2**64}, "int64"),
    ([1, 2], "not a JSON object"),
])
def test_rejections(tmp_path, bad, msg):
    p = _write(tmp_path / "b.jsonl", [HDR, bad, STEP])
    with pytest.raises(TraceError, match=msg) as e:
        read_trace(p)
    assert str(e.value).startswith(p + ":2:")


def test_schema_and_header(tmp_path):
    with pytest.raises(TraceError, match="wrong schema version"):
        read_trace(_write(tmp_path / "c.jsonl", [{**HDR, "schema": "simreplay.trace/2"}]))
    with pytest.raises(TraceError, match="first line is not a header"):
        read_trace(_write(tmp_path / "d.jsonl", [STEP]))


def test_nan_and_malformed(tmp_path):
    p = _write(tmp_path / "e.jsonl", [HDR, '{"type":"step","x":NaN}\n', STEP])
    with pytest.raises(TraceError, match="NaN"):
        read_trace(p)
    p = _write(tmp_path / "f.jsonl", [HDR, '{"type":"step",\n', STEP])
    with pytest.raises(TraceError, match=":2: malformed JSON"):
        read_trace(p)


def test_truncated_final_line(tmp_path):
    p = _write(tmp_path / "g.jsonl", [HDR, STEP, '{"type":"step","ra'])
    t = read_trace(p, warn=False)
    assert len(t.records) == 1
    assert t.warnings == [f"{p}:3: truncated final line ignored"]


def test_concatenated_gzip_members(tmp_path):
    p = str(tmp_path / "h.jsonl.gz")
    with open(p, "wb") as f:
        f.write(gzip.compress((json.dumps(HDR) + "\n").encode()))
        f.write(gzip.compress((json.dumps(STEP) + "\n").encode()))
        f.write(gzip.compress((json.dumps(STEP) + "\n").encode())[:-9])  # killed mid-member
    t = read_trace(p, warn=False)
    assert len(t.of("step")) >= 1
    assert any("truncated" in w for w in t.warnings)


def test_rank_path():
    assert rank_path("out/trace.jsonl.gz", 3, 4) == "out/trace.rank3.jsonl.gz"
    assert rank_path("trace.jsonl", 0, 2) == "trace.rank0.jsonl"
    assert rank_path("trace.jsonl.gz", 0, 1) == "trace.jsonl.gz"
