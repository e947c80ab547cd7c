"""Independent steps of one run's analysis (the summary, each rule, the verdict), two at a time.

Why: on a small trace nearly every statement is DuckDB binding and planning it (a 65 KB trace's ~70 metric
statements took 0.43 s, a few ms of it reading rows), which runs on one core; two statements run on two cursors
of one database take about half the wall time. Results come back in the order of the steps, each computed as it
would be alone: the metric layer builds each metric table, window set and memo entry once, under its own lock
(advisor.metrics.Session), so which worker builds it changes nothing.

Only where it pays and is safe: a run over a cache entry (cursors see its views and metric tables; an Arrow
run's tables are registered on one connection), whose model is small (a large model's statements already keep
both cores busy, and two of them at once would share one memory cap), and not when $ADVISOR_THREADS asks for one
thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from advisor import metrics
from advisor.model.limits import threads_asked
from advisor.model.store import Run

T = TypeVar("T")

WORKERS = 2
# model rows (all tables) up to which a run's steps run two at a time (a 3 MB trace has ~100k)
SMALL_ROWS = 2_000_000


def side_by_side(run: Run | None) -> bool:
    """Whether the steps of `run`'s analysis run two at a time (None: steps that read more than one run)."""
    if run is None or run.entry is None or threads_asked() == 1:
        return False
    return run.rows <= SMALL_ROWS


def in_order(run: Run | None, steps: Sequence[Callable[[], T]], before: Callable[[int], None] | None = None) -> list[T]:
    """Each step's result, in the order of `steps`; `before(i)` is called on this thread, in order, as step i is
    waited for (a surface's progress). The first step to raise (in order) raises here, after every worker stopped."""
    if len(steps) < 2 or not side_by_side(run):
        out = []
        for i, step in enumerate(steps):
            if before is not None:
                before(i)
            out.append(step())
        return out
    assert run is not None
    return _two_at_a_time(run, steps, before)


class _Shared:
    """What the workers share: the next step to take, each step's outcome, and whether to stop taking steps."""

    def __init__(self, n: int) -> None:
        self.lock = threading.Lock()
        self.next = 0
        self.stop = False
        self.done = [threading.Event() for _ in range(n)]
        self.results: list[Any] = [None] * n
        self.errors: list[BaseException | None] = [None] * n

    def take(self) -> int | None:
        with self.lock:
            if self.stop or self.next >= len(self.done):
                return None
            self.next += 1
            return self.next - 1


def _work(run: Run, steps: Sequence[Callable[[], Any]], shared: _Shared) -> None:
    with run.worker():
        while (i := shared.take()) is not None:
            try:
                shared.results[i] = steps[i]()
            except BaseException as e:  # noqa: BLE001 - handed to the caller's thread, which raises it
                shared.errors[i] = e
                shared.stop = True
            finally:
                shared.done[i].set()


def _wait(steps: Sequence[Callable[[], Any]], shared: _Shared, workers: list[threading.Thread],
          before: Callable[[int], None] | None) -> None:
    """Wait for each step in order (calling `before`), until one failed or the workers ended."""
    for i in range(len(steps)):
        if before is not None:
            before(i)
        while not shared.done[i].wait(0.05):  # a timed wait: Ctrl-C reaches this thread at once
            if not any(w.is_alive() for w in workers):
                break
        if shared.errors[i] is not None or not shared.done[i].is_set():
            return


def _two_at_a_time(run: Run, steps: Sequence[Callable[[], T]], before: Callable[[int], None] | None) -> list[T]:
    shared = _Shared(len(steps))
    workers = [threading.Thread(target=_work, args=(run, steps, shared), name=f"advisor-step-{k}", daemon=True)
               for k in range(WORKERS)]
    with run.one_thread_per_statement(), metrics.kept_aside(run):
        for w in workers:
            w.start()
        try:
            _wait(steps, shared, workers, before)
        except BaseException:
            shared.stop = True
            run.interrupt_workers()
            raise
        finally:
            for w in workers:
                w.join()
    first = next((e for e in shared.errors if e is not None), None)
    if first is not None:
        raise first
    return list(shared.results)
