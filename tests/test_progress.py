"""Phases: work done for no test (a namespace made ready ahead) stays out of the test's."""

from __future__ import annotations

import threading

from mochaos import progress


def test_phases_of_detached_work_are_logged_not_recorded() -> None:
    progress.begin_test("t")
    try:

        def ahead() -> None:
            with progress.detached(), progress.phase("made ready ahead"):
                pass

        worker = threading.Thread(target=ahead)
        worker.start()
        worker.join()
        with progress.phase("the test's own"):
            pass
    finally:
        log = progress.end_test()
    assert log is not None and [r.name for r in log.records] == ["the test's own"]
    assert log.current == "the test's own"
