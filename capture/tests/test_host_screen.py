"""The host screen from the Python harnesses (simreplay_capture.host_screen): it reads `simreplay probe
host`, takes the bound from the binary, and the advice and multi-node harnesses repeat a run the host
screened under that bound, as they repeat one under steal."""
import importlib.util
import os
import sys

import pytest

from simreplay_capture import host_screen

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SIMREPLAY_BINARY", os.path.join(REPO, "build", "simreplay"))  # ctest sets it


def _screen(share, bound=0.85):
    return {"cores": 2, "delivered_cores": 2 * share, "delivered_share": share, "bound": bound,
            "single_core_s": 0.1, "all_cores_s": 0.1 / share}


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.access(BIN, os.X_OK), reason="simreplay not built")
def test_a_screen_from_the_binary_carries_the_cores_the_share_and_the_bound():
    s = host_screen.screen(BIN, window_s=0.01)
    assert s["cores"] == len(os.sched_getaffinity(0))
    assert 0 < s["delivered_share"] <= 1 and 0 < s["delivered_cores"] <= s["cores"]
    assert s["bound"] == 0.85


def test_no_binary_no_screen_and_nothing_repeated_for_it():
    assert host_screen.screen("/nonexistent/simreplay") is None
    assert host_screen.window_share(None, _screen(0.5)) is None
    assert host_screen.below_bound(None, _screen(0.5)) is False


def test_the_run_is_judged_on_the_mean_of_the_screens_on_either_side():
    assert host_screen.window_share(_screen(1.0), _screen(0.6)) == pytest.approx(0.8)
    assert host_screen.below_bound(_screen(1.0), _screen(0.6))        # 0.80 < 0.85
    assert not host_screen.below_bound(_screen(1.0), _screen(0.8))    # 0.90
    assert not host_screen.below_bound(_screen(1.0), _screen(0.6, bound=0.75))  # the binary's bound rules


def test_the_harnesses_repeat_a_run_screened_under_the_bound():
    sys.path.insert(0, os.path.join(REPO, "validation", "suite"))
    multinode = _load("validation/suite/multinode.py", "multinode_for_test")
    spec = {"noise": {"max_steal_fraction": 0.05, "retries": 1}}
    assert multinode.noisy({"noise": {"steal_fraction": 0.0, "host_below_bound": True}}, spec)
    assert not multinode.noisy({"noise": {"steal_fraction": 0.0, "host_below_bound": False}}, spec)
    assert not multinode.noisy({"noise": {"steal_fraction": 0.0}}, spec)  # recorded before the screen
    advice = _load("validation/advice/measure.py", "advice_for_test")
    quiet = {"foreign_cpu_share": 0.0, "steal_fraction": 0.0, "host_below_bound": False}
    assert not advice.loaded(quiet)
    assert advice.loaded(dict(quiet, host_below_bound=True))
