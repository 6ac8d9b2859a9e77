"""The multi-node suite's correctness check (validation/suite/multinode.py, check_run) on hand-made runs."""
import gzip
import importlib.util
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    "multinode", os.path.join(HERE, "..", "..", "validation", "suite", "multinode.py"))
multinode = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(multinode)


def _write_run(tmp_path, shards, digests, steps):
    """One run of len(shards) ranks: rank r loaded shards[r][epoch] = indices."""
    for r, by_epoch in enumerate(shards):
        with gzip.open(tmp_path / f"t.rank{r}.jsonl.gz", "wt") as f:
            f.write(json.dumps({"type": "header"}) + "\n")
            for epoch, indices in by_epoch.items():
                for i in indices:
                    f.write(json.dumps({"type": "sample", "epoch": epoch, "index": i}) + "\n")
    return {"world_size": len(shards),
            "ranks": [{"rank": r, "steps": steps[r], "param_sha256": digests[r]} for r in range(len(shards))]}


def test_a_correct_run_has_no_problem(tmp_path):
    s = _write_run(tmp_path, [{0: [0, 2, 4], 1: [1, 3]}, {0: [1, 3, 5], 1: [0, 2]}], ["ab", "ab"], [20, 20])
    assert multinode.check_run(s, str(tmp_path), 20) == []


def test_each_violation_is_named(tmp_path):
    s = _write_run(tmp_path, [{0: [0, 2, 4]}, {0: [4, 5]}], ["ab", "cd"], [20, 19])
    problems = multinode.check_run(s, str(tmp_path), 20)
    text = "; ".join(problems)
    assert "rank 1 ran 19 steps" in text
    assert "parameters differ" in text
    assert "sample 4 loaded by ranks 0 and 1" in text


def test_a_missing_trace_or_digest_fails(tmp_path):
    s = _write_run(tmp_path, [{0: [0]}, {0: [1]}], ["ab", None], [20, 20])
    os.remove(tmp_path / "t.rank1.jsonl.gz")
    text = "; ".join(multinode.check_run(s, str(tmp_path), 20))
    assert "no parameter digest" in text and "no trace of rank 1" in text
