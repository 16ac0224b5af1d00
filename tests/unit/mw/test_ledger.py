"""The master's bookkeeping: who runs what, requeue when a worker leaves, every task
reported once however many copies ran."""

from __future__ import annotations

from roost.mw.events import TaskDone, TaskFailed, TaskRequeued, WorkerJoined, WorkerLeft
from roost.mw.ledger import Ledger


def _ledger(workers: int, speculate: bool = False) -> Ledger:
    led = Ledger(speculate=speculate)
    for i in range(workers):
        assert led.join(f"w{i}", f"1.{i}", "h") == [WorkerJoined(f"w{i}", f"1.{i}", "h")]
    return led


def test_each_idle_worker_gets_one_task_in_order() -> None:
    led = _ledger(2)
    ids = [led.add(x) for x in "abc"]
    assert ids == [0, 1, 2]
    assert led.assign() == [("w0", 0, "a"), ("w1", 1, "b")]
    assert led.assign() == []  # both busy: one task at a time
    assert led.finish("w1", 1, True, "B") == [TaskDone(1, "B", "w1")]
    assert led.assign() == [("w1", 2, "c")]
    assert led.unfinished == 2


def test_a_worker_that_leaves_gives_its_task_to_the_front_of_the_queue() -> None:
    led = _ledger(2)
    for x in range(4):
        led.add(x)
    led.assign()  # w0: 0, w1: 1
    assert led.leave("w0", "disconnected") == [WorkerLeft("w0", "1.0", "disconnected"), TaskRequeued(0, "w0")]
    assert led.requeued == 1
    led.join("w2", "1.0", "h")  # the evicted job runs again: a new worker
    assert led.assign() == [("w2", 0, 0)]  # before 2 and 3
    # a result from the worker that left is not taken (it no longer runs anything)
    assert led.finish("w0", 0, True, "late") == []
    assert led.finish("w2", 0, True, "r0") == [TaskDone(0, "r0", "w2")]
    assert led.leave("w0", "again") == []  # leaving twice reports nothing


def test_a_worker_leaving_idle_requeues_nothing() -> None:
    led = _ledger(1)
    assert led.leave("w0", "silent") == [WorkerLeft("w0", "1.0", "silent")]
    assert led.requeued == 0


def test_a_raising_task_fails_once_and_is_not_retried() -> None:
    led = _ledger(1)
    led.add("x")
    led.assign()
    assert led.finish("w0", 0, False, "Traceback ...") == [TaskFailed(0, "Traceback ...", "w0")]
    assert led.errors == {0: "Traceback ..."} and led.unfinished == 0
    assert led.assign() == []


def test_a_result_for_a_task_the_worker_was_not_given_is_ignored() -> None:
    led = _ledger(2)
    led.add("a")
    led.add("b")
    led.assign()
    assert led.finish("w0", 1, True, "forged") == []  # task 1 is w1's
    assert led.finish("w0", 99, True, "unknown") == []
    assert led.results == {}


def test_speculation_runs_a_copy_of_the_oldest_task_and_reports_it_once() -> None:
    led = _ledger(3, speculate=True)
    led.add("slow")
    led.add("quick")
    assert led.assign() == [("w0", 0, "slow"), ("w1", 1, "quick"), ("w2", 0, "slow")]  # w2 would idle
    assert led.speculated == 1
    assert led.finish("w1", 1, True, 1) == [TaskDone(1, 1, "w1")]
    # the queue is empty and task 0 has two runners (the limit): w1 waits
    assert led.assign() == []
    assert led.finish("w2", 0, True, "copy") == [TaskDone(0, "copy", "w2")]
    assert led.finish("w0", 0, True, "original") == []  # a duplicate, dropped
    assert led.duplicates == 1 and led.results == {0: "copy", 1: 1}
    assert led.unfinished == 0


def test_a_copy_that_survives_its_worker_is_not_requeued() -> None:
    led = _ledger(2, speculate=True)
    led.add("t")
    assert led.assign() == [("w0", 0, "t"), ("w1", 0, "t")]
    assert led.leave("w0", "disconnected") == [WorkerLeft("w0", "1.0", "disconnected")]  # w1 still runs it
    assert led.leave("w1", "disconnected") == [WorkerLeft("w1", "1.1", "disconnected"), TaskRequeued(0, "w1")]
    assert list(led.pending) == [0]


def test_many_leaves_and_joins_lose_and_double_nothing() -> None:
    """A long random run of joins, leaves and results: every task ends with exactly one
    result, the one its payload gives."""
    import random

    rng = random.Random(7)
    led = Ledger(speculate=True)
    tasks = [led.add(i) for i in range(300)]
    running: dict[str, int] = {}
    done: list[int] = []
    n = 0
    while led.unfinished:
        if rng.random() < 0.3 or not led.workers:
            n += 1
            led.join(f"w{n}", f"j{n}", "h")
        for w, t, _ in led.assign():
            running[w] = t
        if running and rng.random() < 0.15:
            w = rng.choice(sorted(running))
            led.leave(w, "vacated")
            del running[w]
        elif running:
            w = rng.choice(sorted(running))
            t = running.pop(w)
            done += [e.task for e in led.finish(w, t, True, t * t) if isinstance(e, TaskDone)]
    assert sorted(done) == tasks
    assert led.results == {t: t * t for t in tasks}
