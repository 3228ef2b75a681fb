"""The engine must not outlive the runner that started it (an orphan keeps the port and the model)."""
import os
import subprocess
import sys
import time

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from rollbook_engine.parent_watch import exit_with_parent
exit_with_parent(poll_s=0.1)
print("watching", flush=True)
time.sleep(30)
"""


def _spawn_parent(env_flag: str) -> tuple[subprocess.Popen, int]:
    # A middle process starts the watcher child, prints its pid, then is SIGKILLed: the child is orphaned.
    pkg_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    middle = (
        "import subprocess, sys, os\n"
        f"env = dict(os.environ, ROLLBOOK_EXIT_WITH_PARENT={env_flag!r})\n"
        f"c = subprocess.Popen([sys.executable, '-c', {CHILD!r}, {pkg_root!r}], env=env, stdout=subprocess.PIPE, text=True)\n"
        "c.stdout.readline()\n"
        "print(c.pid, flush=True)\n"
        "import time; time.sleep(30)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", middle], stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    return parent, child_pid


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purposes; read its state from /proc where there is one.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except FileNotFoundError:
        return True


def test_engine_exits_when_its_parent_is_killed():
    parent, child = _spawn_parent("1")
    parent.kill()
    parent.wait()
    deadline = time.time() + 5
    while _alive(child) and time.time() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def test_without_the_flag_nothing_watches():
    parent, child = _spawn_parent("0")
    parent.kill()
    parent.wait()
    time.sleep(0.6)
    try:
        assert _alive(child)
    finally:
        os.kill(child, 9)
