import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
if PKG_ROOT not in sys.path:
    sys.path.insert(0, PKG_ROOT)


@pytest.fixture(scope="session")
def dataset_dir(tmp_path_factory):
    """A small real dataset (opencv-doc JPEGs + mp4 clips cut from its AVIs) in every format."""
    from simreplay_capture.bench.dataset import make_dataset
    d = str(tmp_path_factory.mktemp("bench-data"))
    make_dataset(d, images=28, videos=4, formats=["files", "tar", "lmdb", "hdf5"], frames=4, seed=1)
    return d


def subprocess_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PKG_ROOT + os.pathsep + env.get("PYTHONPATH", "")
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(k, None)
    return env
