"""The labelling cost meter counts the CPU of a process tree, not wall time."""

from __future__ import annotations

import subprocess
import sys
import time

from oneply.training import cpu_clock
from oneply.training.cpu_clock import tree_cpu_seconds

BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"


def test_finished_and_live_children_count_and_sleep_does_not() -> None:
    start = tree_cpu_seconds()
    assert start is not None
    subprocess.run([sys.executable, "-c", BURN], check=True)  # reaped: our cutime
    after_finished = tree_cpu_seconds()
    assert after_finished is not None and after_finished - start >= 0.45
    live = subprocess.Popen([sys.executable, "-c", BURN + "time.sleep(60)\n"])
    try:
        deadline, seen = time.monotonic() + 20, 0.0
        while time.monotonic() < deadline and seen < 0.45:
            seen = (tree_cpu_seconds() or 0.0) - after_finished
            time.sleep(0.1)
        assert seen >= 0.45  # a live descendant's CPU, before it ends
    finally:
        live.kill()
        live.wait()
    before_sleep = tree_cpu_seconds()
    assert before_sleep is not None
    subprocess.run([sys.executable, "-c", "import time; time.sleep(1.5)"], check=True)
    slept = tree_cpu_seconds()
    assert slept is not None and slept - before_sleep < 0.75  # wall time would say 1.5


def test_no_proc_means_no_figure(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(cpu_clock, "PROC", tmp_path)
    assert tree_cpu_seconds() is None
