"""CPU time and resident memory of a process and its descendants, read from ``/proc`` (Linux).

A process that exits between listing and reading simply drops out of the sample: the worker
tree is sampled while it runs, and a vanished child has nothing left to report.
"""

from __future__ import annotations

import os
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _children(pid: int) -> list[int]:
    """Direct children of ``pid`` over all its threads (``/proc/<pid>/task/<tid>/children``)."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            text = Path(f"/proc/{pid}/task/{tid}/children").read_text()
        except OSError:
            continue
        out.extend(int(child) for child in text.split())
    return out


def tree(pid: int) -> list[int]:
    """``pid`` followed by every descendant, parents before their children."""
    order = [pid]
    i = 0
    while i < len(order):
        order.extend(_children(order[i]))
        i += 1
    return order


def cpu_seconds(pid: int) -> float | None:
    """User plus system CPU of ``pid`` itself, plus that of its children already reaped."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Fields after the command name (which may hold spaces): state is field 3, utime field 14.
    fields = text.rpartition(")")[2].split()
    utime, stime, cutime, cstime = (int(v) for v in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def _status_kib(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def rss_kib(pid: int) -> int:
    return _status_kib(pid, "VmRSS:")


def hwm_kib(pid: int) -> int:
    """The process's own resident high-water mark."""
    return _status_kib(pid, "VmHWM:")


def tree_cpu(pid: int) -> dict[int, float]:
    """CPU seconds of every live process of the tree rooted at ``pid``."""
    out = {}
    for member in tree(pid):
        seconds = cpu_seconds(member)
        if seconds is not None:
            out[member] = seconds
    return out


def tree_rss_kib(pid: int) -> int:
    return sum(rss_kib(member) for member in tree(pid))


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (``/proc/stat``), so
    that a phase can say how much of the machine went to other programs."""
    with open("/proc/stat") as stat:
        fields = [int(v) for v in stat.readline().split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / _TICK
