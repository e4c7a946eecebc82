"""What the benches read of /proc (Linux): a process's CPU ticks and the processes under one,
for figures that count the sandbox's workers, which the kernel charges to no waiting parent
while their zygote lives."""

from __future__ import annotations

import os
from pathlib import Path


def _stat_fields(pid: int) -> list[str]:
    """/proc/PID/stat after the command name (which may hold spaces and parentheses)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_ticks(pid: int) -> int:
    """utime + stime of `pid` in clock ticks (`os.sysconf("SC_CLK_TCK")` a second); 0 once it ended."""
    try:
        fields = _stat_fields(pid)
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return 0


def process_tree(root: int) -> list[int]:
    """`root` first, then every live process under it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(_stat_fields(int(entry))[1])
            except (OSError, IndexError, ValueError):  # ended meanwhile
                continue
            children.setdefault(ppid, []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found
