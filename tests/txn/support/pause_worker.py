"""worker.py, unchanged, with one test hook (``python -m tests.txn.support.pause_worker
<worker.py arguments>``): when ``TXN_PAUSE_FILE`` is set, the first apply of
a journal touches that file and hangs, so a test can SIGKILL the real worker
between journal and apply."""

from __future__ import annotations

import os
import sys
import time

from activities.txn import journal


def _pause_first_apply() -> None:
    pause = os.environ.get("TXN_PAUSE_FILE")
    if not pause:
        return
    real = journal.apply_journal

    def hang(*args, **kwargs):  # type: ignore[no-untyped-def]
        open(pause, "w").close()
        time.sleep(600)  # the test kills the worker here
        return real(*args, **kwargs)

    journal.apply_journal = hang


if __name__ == "__main__":
    _pause_first_apply()
    import cli.worker as worker

    worker.main(sys.argv[1:])
