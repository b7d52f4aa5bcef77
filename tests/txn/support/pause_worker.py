"""worker.py, unchanged, with one test hook (``python -m tests.txn.support.pause_worker
<worker.py arguments>``): when ``TXN_PAUSE_FILE`` is set, the first apply of
a journal touches that file and hangs, so a test can SIGKILL the real worker
between journal and apply. ``TXN_ROLLBACK_PAUSE_FILE`` does the same in a
rollback, after ``TXN_ROLLBACK_PAUSE_AFTER`` paths (default 20) are restored."""

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


def _pause_mid_rollback() -> None:
    pause = os.environ.get("TXN_ROLLBACK_PAUSE_FILE")
    if not pause:
        return
    from activities.txn import apply

    after = int(os.environ.get("TXN_ROLLBACK_PAUSE_AFTER", "20"))
    real = apply._apply_one
    done = [0]

    def counting(reader, content_dir, c, tag, *rest):  # type: ignore[no-untyped-def]
        if tag == "rollback":
            if done[0] == after:
                open(pause, "w").close()
                time.sleep(600)  # the test kills the worker here
            done[0] += 1
        return real(reader, content_dir, c, tag, *rest)

    apply._apply_one = counting


if __name__ == "__main__":
    _pause_first_apply()
    _pause_mid_rollback()
    import cli.worker as worker

    worker.main(sys.argv[1:])
