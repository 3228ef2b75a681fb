"""Exit when the process that started the engine is gone.

The runner supervises the engine and stops it on shutdown, but a runner killed outright (SIGKILL, a crashed
test harness) cannot: the engine would live on as an orphan holding its port and the model's memory, and
the next runner on that port would fail to start its own. With ROLLBOOK_EXIT_WITH_PARENT=1 (the runner's
supervisor sets it) a daemon thread checks the parent pid and ends the process when it changes. Polling,
not prctl(PR_SET_PDEATHSIG), because that is Linux-only and fires on the parent *thread's* exit.
"""
from __future__ import annotations

import logging
import os
import threading
import time

from .settings import engine_settings

log = logging.getLogger(__name__)


def exit_with_parent(poll_s: float = 1.0) -> None:
    if not engine_settings().exit_with_parent:
        return
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(poll_s)
            if os.getppid() != parent:
                log.warning("parent process %d is gone: the engine exits", parent)
                os._exit(0)  # the server loop is not ours to unwind from this thread

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
