"""The media probe on real files: the bench pipeline's own __getitem__ timed on the dataset's JPEGs at
0.5x/1x/2x and its clips at 1x/2x length; bad input is a clear error and nothing is written."""
import json
import subprocess
import sys

import pytest

from conftest import subprocess_env
from simreplay_capture import probe_media


@pytest.fixture(scope="module")
def probed(dataset_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("probe-media") / "probe-media.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_media", "--bench-data", dataset_dir,
                        "--image-size", "64", "--frames", "4", "--samples", "3", "--reps", "1", "--out", str(out)],
                       env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.load(open(out))


def test_every_file_at_every_scale_with_the_pipelines_own_shapes(probed):
    assert probed["schema"] == "simreplay.probe-media/1"
    pts = probed["points"]
    jpeg = {(p["file"], p["scale"]): p for p in pts if p["media"] == "jpeg"}
    clips = {(p["file"], p["frames_scale"]): p for p in pts if p["media"] == "mp4"}
    assert len(jpeg) == 3 * 3 and len(clips) == 3 * 2
    for (f, s), p in jpeg.items():
        one = jpeg[(f, 1.0)]
        # the pipeline noted the decoded shape: 2x the side at scale 2 (rounding: within a pixel)
        assert abs(p["width"] - one["width"] * s) <= 1 and abs(p["height"] - one["height"] * s) <= 1
        assert p["split"] and p["decode_s"] > 0 and p["augment_s"] > 0 and p["reps"] == 1
    for (f, fs), p in clips.items():
        assert p["frames"] == 4 * fs  # the bench decodes frames x frames_scale of a clip that long
    # larger images take longer to decode (per file, 2x vs 0.5x: 16x the pixels)
    assert all(jpeg[(f, 2.0)]["decode_s"] > jpeg[(f, 0.5)]["decode_s"] for f, _ in jpeg)


def test_lengthen_clip_repeats_frames_in_order(dataset_dir):
    import av
    import io
    import os
    man = json.load(open(os.path.join(dataset_dir, "dataset.json")))
    clip = next(s for s in man["samples"] if s["kind"] == "video")
    data = open(os.path.join(dataset_dir, "files", f"{clip['key']}.mp4"), "rb").read()
    longer = probe_media.lengthen_clip(data, 2.0, "mp4")
    with av.open(io.BytesIO(longer)) as c:
        frames = list(c.decode(video=0))
    assert len(frames) == 2 * clip["frames"] and frames[0].width == clip["width"]


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "p.json"
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_media", "--bench-data", str(tmp_path / "nope"),
                        "--out", str(out)], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 3 and "not a directory" in p.stderr and not out.exists()
    (tmp_path / "empty").mkdir()
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_media", "--bench-data", str(tmp_path / "empty"),
                        "--out", str(out)], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 3 and "no image" in p.stderr and not out.exists()
    p = subprocess.run([sys.executable, "-m", "simreplay_capture.probe_media", "--bench-data", str(tmp_path),
                        "--scales", "0,2", "--out", str(out)], env=subprocess_env(), capture_output=True, text=True)
    assert p.returncode == 2 and "--scales" in p.stderr and not out.exists()
