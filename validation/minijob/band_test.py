#!/usr/bin/env python3
"""The minijob harness's band (validation/minijob/run.py, docs/planning.md "Checked against real jobs"):
the prediction interval derived from development cases, by hand; a band file that is bad input, or that
would be judged on the cases it came from, refused in one line before anything runs (no dataset made,
no output directory). No torch, no real job: a second or two.
Run: python3 validation/minijob/band_test.py (ctest: minijob_band)."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import run  # noqa: E402


def case(name: str, error: float, scored: bool = True, workers: int = 2) -> dict:
    return {"case": name, "scored": scored, "training_error": error, "workers": workers}


class DeriveBand(unittest.TestCase):
    def test_prediction_interval_by_hand(self) -> None:
        errors = [-0.05, -0.03, -0.04, -0.02]
        band = run.derive_band([case(f"c{i}", e) for i, e in enumerate(errors)] + [case("loaded", 0.9, False)],
                               "abc1234")
        mean = -0.035
        sd = math.sqrt(sum((e - mean) ** 2 for e in errors) / 3)  # 0.012910
        half = 3.182 * sd * math.sqrt(1 + 1 / 4)                   # t(0.975, 3) = 3.182
        self.assertAlmostEqual(band["error_low"], round(mean - half, 4))  # -0.0809
        self.assertAlmostEqual(band["error_high"], round(mean + half, 4))  # +0.0109
        self.assertEqual(band["cases"], ["c0", "c1", "c2", "c3"])  # the unscored case is no evidence
        self.assertIn("abc1234", band["source"])
        self.assertEqual(band["workers"], [2])
        self.assertEqual(band["prediction"], run.PREDICTION)

    def test_never_excludes_zero(self) -> None:
        band = run.derive_band([case("a", -0.05), case("b", -0.051), case("c", -0.049)], "x")
        self.assertEqual(band["error_high"], 0.0)
        self.assertLess(band["error_low"], -0.05)

    def test_needs_three_scored_cases(self) -> None:
        with self.assertRaises(RuntimeError):
            run.derive_band([case("a", 0.0), case("b", 0.01), case("c", 0.02, scored=False)], "x")


class BandFile(unittest.TestCase):
    def harness(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, os.path.join(HERE, "run.py"), "--out", self.out, *args],
                              capture_output=True, text=True, timeout=60)

    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.out = os.path.join(self.tmp.name, "out")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def band_file(self, band: object) -> str:
        path = os.path.join(self.tmp.name, "band.json")
        with open(path, "w") as f:
            f.write(band if isinstance(band, str) else json.dumps(band))
        return path

    def refused(self, r: subprocess.CompletedProcess, words: str) -> None:
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn(words, r.stderr)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertFalse(os.path.exists(self.out))  # nothing made, nothing written

    def test_band_judged_on_its_own_cases_is_refused(self) -> None:
        path = self.band_file({"schema": "simreplay.minijob-band/1", "prediction": run.PREDICTION, "error_low": -0.08, "error_high": 0.0,
                               "workers": [2], "cases": ["k30-f0"], "source": "test"})
        self.refused(self.harness("--band", path, "--cases", "k30-f0,k40-f1"), "the band was derived from k30-f0")

    def test_band_of_another_worker_count_is_refused(self) -> None:
        path = self.band_file({"schema": "simreplay.minijob-band/1", "prediction": run.PREDICTION, "error_low": -0.08, "error_high": 0.0,
                               "workers": [2], "cases": ["k30-f0"], "source": "test"})
        self.refused(self.harness("--band", path, "--workers", "1"), "measured at [2] loader worker(s), not at [1]")

    def test_wrong_schema_truncated_and_out_of_range_bands_are_refused(self) -> None:
        self.refused(self.harness("--band", self.band_file({"schema": "x"})), "expected schema simreplay.minijob-band/1")
        self.refused(self.harness("--band", self.band_file('{"schema": "simreplay.minijob-band/1", "err')), "band.json")
        wide = {"schema": "simreplay.minijob-band/1", "prediction": run.PREDICTION, "error_low": 0.2, "error_high": 0.0, "workers": [2], "cases": [],
                "source": "t"}
        self.refused(self.harness("--band", self.band_file(wide)), "error_low <= 0")

    def test_band_of_another_prediction_path_is_refused(self) -> None:
        path = self.band_file({"schema": "simreplay.minijob-band/1", "error_low": -0.08, "error_high": 0.0,
                               "workers": [2], "cases": ["k30-f0"], "source": "one deterministic trial"})
        self.refused(self.harness("--band", path), "measured on another prediction path")

    def test_band_and_write_band_exclude_each_other_and_unknown_cases_are_refused(self) -> None:
        self.refused(self.harness("--band", "b.json", "--write-band", "c.json"), "exclude each other")
        self.refused(self.harness("--cases", "k31-f9"), "unknown case k31-f9")

    def test_the_sets_do_not_overlap(self) -> None:
        self.assertFalse(set(run.DEVELOPMENT_CASES) & set(run.HELD_OUT_CASES))
        self.assertEqual(set(run.DEVELOPMENT_CASES) | set(run.HELD_OUT_CASES), set(run.CASES))


if __name__ == "__main__":
    unittest.main()
