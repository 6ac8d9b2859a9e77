"""procfs's noise window: the host's busy, steal and foreign CPU around a run (the validation harnesses
repeat a run whose foreign share is over their bound, so the arithmetic must be right)."""
import subprocess

from simreplay_capture import procfs


def _sample(busy, steal, total):
    return {"busy_ns": busy, "steal_ns": steal, "total_ns": total, "loadavg_1m": 1.0, "mhz": 0.0}


def test_foreign_share_leaves_out_the_runs_own_cpu_and_steal():
    before = _sample(busy=100e9, steal=5e9, total=400e9)
    after = _sample(busy=110e9, steal=6e9, total=420e9)  # 10 s busy (1 s of it steal) over 20 s of cores
    assert abs(procfs.foreign_cpu_fraction(before, after, own_cpu_ns=4e9) - (10 - 1 - 4) / 20) < 1e-12
    assert procfs.foreign_cpu_fraction(before, after, own_cpu_ns=50e9) == 0.0  # never negative
    w = procfs.noise_window(before, after)
    assert abs(w["steal_fraction"] - 1 / 20) < 1e-12 and abs(w["busy_fraction"] - 10 / 20) < 1e-12


def test_a_childs_cpu_is_counted_as_its_own():
    own0 = procfs.children_cpu_ns()
    subprocess.run(["/usr/bin/python3", "-c", "sum(range(3000000))"], check=True)
    assert procfs.children_cpu_ns() - own0 > 0


def test_the_main_threads_cpu_leaves_out_the_other_threads():
    # A second thread spins for ~0.3 s while the main thread sleeps: the process's CPU holds it, the
    # main thread's does not (what splits a DataLoader worker's send thread from its loading).
    import os
    import threading
    import time
    pid = os.getpid()
    before = procfs.proc_sample(pid, with_pss=False)

    def spin():
        t = time.thread_time()
        while time.thread_time() - t < 0.3:
            pass

    th = threading.Thread(target=spin)
    th.start()
    th.join()
    after = procfs.proc_sample(pid, with_pss=False)
    process = after["cpu_ns"] - before["cpu_ns"]
    main = after["main_thread_cpu_ns"] - before["main_thread_cpu_ns"]
    assert before["main_thread_cpu_ns"] >= 0
    assert process >= 0.2e9 and main <= 0.1e9, (process, main)
    assert procfs.main_thread_cpu_ns(2 ** 22 + 12345) == -1  # no such process
