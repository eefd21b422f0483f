"""The labelling cost meter counts the CPU of a process tree, not wall time."""

from __future__ import annotations

import subprocess
import sys
import time

from oneply.training.data import cpu_clock
from oneply.training.data.cpu_clock import tree_cpu_seconds

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


def test_a_shard_written_after_its_tree_lost_processes_falls_back_to_wall_time(tmp_path) -> None:
    """An interrupted generate writes its last shard after its workers and their Stockfish
    died unreaped: the tree then reads less CPU than at the shard's start (once −1,598 s in
    the campaign's ledger). Such a shard is charged wall time × workers, never a negative."""
    import json
    import os
    import signal

    from oneply.training.data.shard_writer import Writer

    spawner = (
        "import subprocess, sys, time\n"
        f"p = subprocess.Popen([sys.executable, '-c', {BURN + 'time.sleep(60)'!r}])\n"
        "print(p.pid, flush=True)\n"
        "time.sleep(60)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", spawner], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    grandchild = int(child.stdout.readline())
    try:
        time.sleep(1.5)  # the grandchild burns its 0.5 s inside our tree
        writer = Writer(tmp_path, (0, 1), {}, "gen-")
        child.kill()  # the grandchild is orphaned: its CPU leaves our tree unreaped
        child.wait()
        writer.add(0, [])
        writer.flush(1)
    finally:
        os.kill(grandchild, signal.SIGKILL)
    meta = json.loads((tmp_path / "gen-0of1-000000000" / "meta.json").read_text())
    assert meta["worker_clock"] == "wall" and 0 <= meta["worker_seconds"] < 5
