"""How many llama.cpp threads a decode gets: by default, the cores other programs leave free.

ggml's CPU threads meet at a barrier after every operation of the graph (hundreds per token)
and wait there spinning. When another program holds a core, the thread of ours on it is
descheduled and its sibling waits until it comes back: with a busy second core two threads made
a model key 2.1x slower than one (once 12.4 s; docs/benchmarks.md, "Threads on a busy machine").
One thread never waits for a sibling, so a thread is added only for a core nobody else is using.

The load is read from /proc/stat (every program) minus /proc/self/stat (this process, so our
own decoding threads do not count as load), over the last quarter second or more; a reading
costs about 0.1 ms and is taken at most every 50 ms (1 µs otherwise). Where /proc is missing
(not Linux) the 1-minute load average stands in.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass

# ModelOptions.n_threads value for "as many as the free cores allow, up to default_threads()".
AUTO_THREADS = 0
# A core counts as free when other programs used less than three quarters of it.
FREE_CORE_SLACK = 0.25
REFRESH_S = 0.05   # at most one reading of /proc per this interval
WINDOW_S = 0.25    # the load is judged over at least this much of the past


def default_threads() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def threads_for(free_cores: float, most: int) -> int:
    """The thread count for `free_cores` cores left by other programs: at least 1, at most `most`."""
    if not math.isfinite(free_cores):
        return 1
    return max(1, min(most, math.floor(free_cores + FREE_CORE_SLACK)))


@dataclass(frozen=True)
class CpuSample:
    at: float       # time.monotonic()
    total: int      # jiffies of every CPU, every state
    idle: int       # idle + iowait jiffies
    own: int        # this process's user + system jiffies (all its threads)


def free_cores_between(before: CpuSample, after: CpuSample, n_cpus: int) -> float:
    """Cores that programs other than this one left idle between two samples."""
    total = after.total - before.total
    if total <= 0:
        return float(n_cpus)
    busy = total - (after.idle - before.idle)
    others = max(0, busy - (after.own - before.own))
    return n_cpus * (1.0 - min(1.0, others / total))


def parse_proc_stat(text: str) -> tuple[int, int, int]:
    """(total, idle, number of CPUs) from /proc/stat."""
    total = idle = n_cpus = 0
    for line in text.splitlines():
        if line.startswith("cpu "):
            fields = [int(v) for v in line.split()[1:9]]
            fields += [0] * (8 - len(fields))
            total, idle = sum(fields), fields[3] + fields[4]
        elif line.startswith("cpu"):
            n_cpus += 1
    return total, idle, max(1, n_cpus)


def parse_own_jiffies(text: str) -> int:
    """utime + stime from /proc/self/stat (fields 14 and 15; the name in field 2 may hold spaces)."""
    fields = text[text.rindex(")") + 2:].split()
    return int(fields[11]) + int(fields[12])


class LoadMeter:
    """Free cores right now, from readings kept over the last second or so (thread-safe)."""

    def __init__(self, proc: str = "/proc") -> None:
        self._proc = proc
        self._lock = threading.Lock()
        self._samples: deque[CpuSample] = deque()
        self._n_cpus = os.cpu_count() or 1
        self._free = None   # last answer, kept for REFRESH_S

    def _read(self) -> CpuSample | None:
        try:
            with open(f"{self._proc}/stat", encoding="ascii") as f:
                total, idle, self._n_cpus = parse_proc_stat(f.read())
            with open(f"{self._proc}/self/stat", encoding="ascii", errors="replace") as f:
                own = parse_own_jiffies(f.read())
        except (OSError, ValueError, IndexError):
            return None
        return CpuSample(time.monotonic(), total, idle, own)

    def free_cores(self) -> float:
        with self._lock:
            now = time.monotonic()
            if self._free is not None and self._samples and now - self._samples[-1].at < REFRESH_S:
                return self._free
            sample = self._read()
            if sample is None:
                self._free = self._from_load_average()
                return self._free
            self._samples.append(sample)
            # The newest reading at least WINDOW_S old is the reference; older ones are dropped.
            while len(self._samples) > 2 and sample.at - self._samples[1].at >= WINDOW_S:
                self._samples.popleft()
            if len(self._samples) == 1:
                self._free = self._from_load_average()
            else:
                self._free = free_cores_between(self._samples[0], sample, self._n_cpus)
            return self._free

    def _from_load_average(self) -> float:
        try:
            return max(0.0, self._n_cpus - os.getloadavg()[0])
        except OSError:
            return float(self._n_cpus)


_meter = LoadMeter()
_decodes_by_threads: Counter[int] = Counter()
_count_lock = threading.Lock()


def count_decode(threads: int) -> None:
    with _count_lock:
        _decodes_by_threads[threads] += 1


def decodes_by_threads() -> dict[int, int]:
    """How many llama_decode calls ran with each thread count since the process started (benchmarks)."""
    with _count_lock:
        return dict(sorted(_decodes_by_threads.items()))


class ThreadChoice:
    """A context's thread count: fixed when the user set one, else chosen per decode from the load."""

    def __init__(self, n_threads: int, meter: LoadMeter | None = None) -> None:
        self.adaptive = n_threads == AUTO_THREADS
        self.most = default_threads() if self.adaptive else max(1, n_threads)
        self._meter = meter or _meter

    def now(self) -> int:
        if not self.adaptive or self.most == 1:
            return self.most
        return threads_for(self._meter.free_cores(), self.most)
