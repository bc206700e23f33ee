"""The default llama.cpp thread count follows the cores other programs leave free
(karukan_engine/neural/threads.py): the arithmetic, the /proc readings, a real busy process, and
the count reaching a live llama.cpp context between decodes."""

import os
import subprocess
import sys
import threading
import time

import pytest
from hypothesis import given, strategies as st

from karukan_engine.neural import threads
from karukan_engine.neural.threads import (AUTO_THREADS, CpuSample, LoadMeter, ThreadChoice, WINDOW_S,
                                           default_threads, free_cores_between, parse_own_jiffies,
                                           parse_proc_stat, threads_for)

LINUX = os.path.exists("/proc/stat") and os.path.exists("/proc/self/stat")


@given(st.floats(allow_nan=True, allow_infinity=True), st.integers(1, 64))
def test_the_count_is_between_one_and_the_most(free, most):
    assert 1 <= threads_for(free, most) <= most


@given(st.floats(-4, 70), st.floats(-4, 70), st.integers(1, 64))
def test_more_free_cores_never_mean_fewer_threads(a, b, most):
    low, high = sorted((a, b))
    assert threads_for(low, most) <= threads_for(high, most)


def test_a_busy_second_core_leaves_one_thread():
    assert threads_for(1.0, 2) == 1       # the other core fully used
    assert threads_for(1.5, 2) == 1       # half used: its thread would still be preempted
    assert threads_for(2.0, 2) == 2
    assert threads_for(1.8, 4) == 2 and threads_for(3.9, 4) == 4


samples = st.builds(lambda total, idle_share, own_share: (total, int(total * idle_share), int(total * (1 - idle_share) * own_share)),
                    st.integers(0, 10**6), st.floats(0, 1), st.floats(0, 1))


@given(samples, st.integers(1, 16))
def test_free_cores_stay_within_the_machine(delta, n_cpus):
    total, idle, own = delta
    free = free_cores_between(CpuSample(0, 0, 0, 0), CpuSample(1, total, idle, own), n_cpus)
    assert 0 <= free <= n_cpus


@given(samples, st.integers(0, 10**5), st.integers(1, 16))
def test_our_own_work_is_not_load(delta, more_own, n_cpus):
    """Busy time that is this process's own (its decoding threads) never lowers the free cores."""
    total, idle, own = delta
    more_own = min(more_own, total - idle - own)
    before = CpuSample(0, 0, 0, 0)
    plain = free_cores_between(before, CpuSample(1, total, idle, own), n_cpus)
    ours = free_cores_between(before, CpuSample(1, total, idle, own + more_own), n_cpus)
    assert ours >= plain - 1e-9


def test_proc_stat_and_a_process_name_with_spaces_and_parentheses():
    stat = "cpu  100 5 50 800 20 3 2 0 0 0\ncpu0 50 2 25 400 10 1 1 0 0 0\ncpu1 50 3 25 400 10 2 1 0 0 0\nintr 1\n"
    assert parse_proc_stat(stat) == (980, 820, 2)
    assert parse_own_jiffies("4242 (a) b (c)) R 1 2 3 4 5 6 7 8 9 10 70 30 0 0 20 0\n") == 100


def _write_proc(root, total_busy, idle, own):
    (root / "self").mkdir(exist_ok=True)
    (root / "stat").write_text(f"cpu  {total_busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0\ncpu1 0 0 0 0\n")
    (root / "self" / "stat").write_text(f"1 (python) S 0 0 0 0 0 0 0 0 0 0 {own} 0 0 0\n")


def test_the_meter_judges_the_last_window(tmp_path):
    meter = LoadMeter(str(tmp_path))
    _write_proc(tmp_path, 0, 0, 0)
    meter.free_cores()                                # first reading: the load average stands in
    time.sleep(WINDOW_S + 0.02)
    _write_proc(tmp_path, 150, 50, 50)                # 200 jiffies: 150 busy, 50 of them ours
    assert meter.free_cores() == pytest.approx(2 * (1 - 100 / 200))
    assert meter.free_cores() == pytest.approx(1.0)   # within REFRESH_S: the same answer


def test_without_proc_the_load_average_stands_in(tmp_path):
    meter = LoadMeter(str(tmp_path / "missing"))
    assert 0 <= meter.free_cores() <= (os.cpu_count() or 1)


@pytest.mark.skipif(not LINUX, reason="reads /proc")
def test_a_spinning_program_takes_a_core_and_our_own_spinning_does_not():
    n_cpus = os.cpu_count() or 1
    meter = LoadMeter()
    meter.free_cores()
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass

    own = threading.Thread(target=spin)
    own.start()
    try:
        time.sleep(0.6)
        assert meter.free_cores() > n_cpus - 0.6     # a core busy with our own thread
    finally:
        stop.set()
        own.join()
    other = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.6)
        meter.free_cores()
        time.sleep(WINDOW_S + 0.05)
        assert meter.free_cores() < n_cpus - 0.6     # a core busy with another program
    finally:
        other.kill()
        other.wait()


class FakeMeter:
    def __init__(self, free):
        self.free = free

    def free_cores(self):
        return self.free


def test_a_fixed_count_ignores_the_load():
    assert ThreadChoice(3, FakeMeter(0.0)).now() == 3
    assert ThreadChoice(AUTO_THREADS, FakeMeter(0.0)).now() == 1
    assert ThreadChoice(AUTO_THREADS, FakeMeter(64.0)).now() == default_threads()


@pytest.mark.skipif(default_threads() < 2, reason="one CPU: the count cannot change")
def test_the_count_reaches_llama_cpp_between_decodes(monkeypatch):
    llama_cpp = pytest.importorskip("llama_cpp")
    from karukan_engine.neural.model import load_model
    from neural_support import tiny_model_dir

    meter = FakeMeter(64.0)
    monkeypatch.setattr(threads, "_meter", meter)
    contexts = []
    init = llama_cpp.llama_init_from_model

    def spy_init(model, params):
        contexts.append(init(model, params))
        return contexts[-1]

    monkeypatch.setattr(llama_cpp, "llama_init_from_model", spy_init)
    with load_model(tiny_model_dir("llama")) as model:
        model.greedy("かんじ", max_new=2)
        assert {llama_cpp.llama_n_threads(c) for c in contexts} == {default_threads()}
        meter.free = 1.0                                   # another program took a core
        model.greedy("かんじ", max_new=2)
        assert {llama_cpp.llama_n_threads(c) for c in contexts} == {1}
        assert {llama_cpp.llama_n_threads_batch(c) for c in contexts} == {1}
        meter.free = 64.0
        model.greedy("かんじ", max_new=2)
        assert {llama_cpp.llama_n_threads(c) for c in contexts} == {default_threads()}
