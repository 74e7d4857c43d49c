"""Where work runs in parallel: threads for the kernels, processes only for ``regex``.

The kernels (scanning, counting, encoding) run without the GIL, so threads are
their natural workers: nothing is spawned or pickled, no ``if __name__ ==
"__main__":`` guard is needed in a user's script, the workers share one copy
of the vocabulary, and they end with the process however it ends. Only
pre-tokenizing with a custom pattern holds the GIL (``regex`` builds a str per
pre-token), and only that runs in processes (``map_in_processes``).
"""
from __future__ import annotations

import collections
import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Sequence, TypeVar

if TYPE_CHECKING:
    import multiprocessing.context

Item = TypeVar("Item")
Result = TypeVar("Result")

#: encode_batch (a tokenizer's) hands the kernel at least about this many characters (not bytes)
#: per call, and at most MAX_BATCH_CHARS: as many as leave each thread
#: BATCHES_PER_THREAD batches. Each batch costs a session, three GIL releases
#: and, where ints are counted (``PrebuiltInts``), a count per vocabulary id:
#: on 20 MB of code,
#: batches of 2^20 gave 2 threads 3-11 % more than batches of 2^18, and one
#: thread 1-3 %. Enough batches per thread keep the last one short, so that
#: one thread does not work alone at the end.
BATCH_CHARS = 1 << 18
MAX_BATCH_CHARS = 1 << 20
BATCHES_PER_THREAD = 8


def batch_chars(total_chars: int, threads: int) -> int:
    """The characters per batch for ``total_chars`` on ``threads`` threads: see
    BATCH_CHARS."""
    return min(MAX_BATCH_CHARS, max(BATCH_CHARS, total_chars // (threads * BATCHES_PER_THREAD)))


def batches(texts: Sequence[str], chars: int = BATCH_CHARS) -> list[list[str]]:
    """``texts`` in consecutive groups of about ``chars`` characters (a text is
    never split: a group ends once it holds ``chars`` or more)."""
    batches, size, current = [], 0, []
    for text in texts:
        current.append(text)
        size += len(text)
        if size >= chars:
            batches.append(current)
            current, size = [], 0
    if current:
        batches.append(current)
    return batches


#: What a forked child renews, by holder (a module, an encoder, a tokenizer)
#: ``id``: a weak reference to the holder and, by name, what renews part of it.
#: Keyed by id, not by the holder, since a Tokenizer compares by value and has
#: no hash.
_IN_CHILD: "dict[int, tuple[weakref.ref, dict[str, Callable[[Any], None]]]]" = {}


def in_forked_child(holder: object, name: str, renew: Callable[[Any], None]) -> None:
    """Run ``renew(holder)`` in each child this process forks while ``holder``
    lives (one ``renew`` per ``name``, in the order first named). The child
    has only the thread that forked: what another thread held or was halfway
    through at that moment (a lock, a call's session) would stay so for ever."""
    key = id(holder)
    entry = _IN_CHILD.get(key)
    if entry is None or entry[0]() is not holder:
        def forget(reference, key=key):
            if _IN_CHILD.get(key, (None,))[0] is reference:
                del _IN_CHILD[key]

        entry = _IN_CHILD[key] = (weakref.ref(holder, forget), {})
    entry[1][name] = renew


def fork_safe_lock(holder: object, name: str, kind: Callable = threading.Lock):
    """A new lock (``kind``: ``threading.Lock``, or ``RLock``) as ``holder.name``
    (returned), made afresh in each child this process forks: a lock that
    another thread held at that moment (one in ``clear_cache``, say) would stay
    held in the child for ever, and its first call would hang."""
    lock = kind()
    setattr(holder, name, lock)
    in_forked_child(holder, name, lambda renewed: setattr(renewed, name, kind()))
    return lock


def _renew_in_child() -> None:
    for reference, renewals in list(_IN_CHILD.values()):
        holder = reference()
        for renew in renewals.values() if holder is not None else ():
            renew(holder)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_renew_in_child)


class RecentlyBuilt:
    """The few objects this process built last, by key (most recent last), for
    what a worker unpickles: one given the same tokenizer with every task
    builds it once, not at every task."""

    def __init__(self, kept: int):
        self.kept = kept
        self.built: dict = {}
        self._lock = fork_safe_lock(self, "_lock")

    def get(self, key, build: Callable[[], Result]) -> Result:
        """The object built for ``key``, or ``build()``'s, kept as the most recent."""
        with self._lock:
            known = self.built.pop(key, None)
            if known is None:
                known = build()
            self.built[key] = known
            while len(self.built) > self.kept:
                self.built.pop(next(iter(self.built)))
            return known


def resolve_workers(num_workers: Optional[int], name: str = "num_workers") -> int:
    """``num_workers`` checked (``name``: the argument, for the error), or the cores
    this process may run on for None."""
    if num_workers is None:
        try:
            return max(len(os.sched_getaffinity(0)), 1)
        except AttributeError:
            return os.cpu_count() or 1
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 1:
        raise ValueError(f"{name} must be a positive int or None, got {num_workers!r}")
    return num_workers


def map_on_threads(function: Callable[[Item], Result], items: Sequence[Item], num_workers: int) -> list[Result]:
    """``[function(item) for item in items]`` on up to ``num_workers`` threads, the
    calling thread among them, each taking the next item when it is free.

    For a few dozen calls that each release the GIL for milliseconds
    (``Tokenizer.encode_batch``'s batches): an executor's futures woke the
    caller for every result, to take the GIL the workers were waiting for.
    If ``function`` raises, no thread takes a new item, and the exception of
    the first item in order that raised is raised here: every item before it
    was taken earlier, so has been done or has raised too.
    """
    num_workers = min(num_workers, len(items))
    if num_workers <= 1:
        return [function(item) for item in items]
    results: list = [None] * len(items)
    failures: list[tuple[int, BaseException]] = []
    order = iter(range(len(items)))     # next() on it is atomic under the GIL

    def take_items() -> None:
        for k in order:
            if failures:
                return
            try:
                results[k] = function(items[k])
            except BaseException as error:   # noqa: BLE001 - raised in the calling thread below
                failures.append((k, error))
                return

    helpers = [threading.Thread(target=take_items, daemon=True) for _ in range(num_workers - 1)]
    for helper in helpers:
        helper.start()
    take_items()
    for helper in helpers:
        helper.join()
    if failures:
        raise min(failures, key=lambda failure: failure[0])[1]
    return results


def map_ordered(function: Callable[[Item], Result], items: Iterable[Item], num_workers: int,
                window: Optional[int] = None) -> Iterator[tuple[Item, Result]]:
    """``(item, function(item))`` for each item, in order, computed on ``num_workers``
    threads (in this one for 1) with at most ``window`` (default 2 per worker)
    in flight, so items are drawn lazily and results do not pile up.

    A failure is raised at its item's turn. When the caller stops early (an
    error, Ctrl-C, ``close()``), items not started are cancelled and the
    running ones are waited for: no thread outlives the call.
    """
    if num_workers <= 1:
        for item in items:
            yield item, function(item)
        return
    window = window or 2 * num_workers
    items = iter(items)
    pending: collections.deque = collections.deque()
    from concurrent.futures import ThreadPoolExecutor      # on use: loading and encode_batch never need it

    pool = ThreadPoolExecutor(num_workers, thread_name_prefix="bpe-worker")
    try:
        while True:
            while len(pending) < window:
                item = next(items, _END)
                if item is _END:
                    break
                pending.append((item, pool.submit(function, item)))
            if not pending:
                return
            item, future = pending.popleft()
            yield item, future.result()
    finally:
        for _, future in pending:
            future.cancel()
        pool.shutdown(wait=True, cancel_futures=True)


_END = object()


def process_context() -> Optional[multiprocessing.context.BaseContext]:
    """The start method for worker processes: fork on Linux, where a child starts
    with the parent's modules and needs no ``__main__`` guard in the user's
    script (whatever the default start method, which Python 3.14 makes
    forkserver); None elsewhere, where callers use threads instead.
    ``multiprocessing`` is imported here, on use: the kernels' thread workers
    never need it."""
    import multiprocessing

    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return None


def map_in_processes(function: Callable[[Item], Result], tasks: Iterable[Item],
                     num_workers: int) -> Iterator[Result]:
    """``function(task)`` for each task, in order, in ``num_workers`` processes: for
    work that holds the GIL. ``function`` must be a module-level function and
    tasks and results picklable. Falls back to threads where fork is missing."""
    context = process_context()
    if num_workers <= 1 or context is None:
        for _, result in map_ordered(function, tasks, num_workers):
            yield result
        return
    with context.Pool(num_workers) as pool:
        yield from pool.imap(function, tasks)
