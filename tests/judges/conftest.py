import sys
import threading
from collections.abc import Callable

import pytest

from kgeval.config import JudgesConfig
from kgeval.judges import KgLookup, kg_lookup
from kgeval.stores import EmbeddedStore


def turtle_kg(tmp_path_factory: pytest.TempPathFactory, ttl: str, kg: str) -> tuple[EmbeddedStore, KgLookup]:
    """An embedded store of the Turtle `ttl` (written to a fresh directory) and the judges' lookup
    of it as KG `kg`, for a module-scoped fixture."""
    path = tmp_path_factory.mktemp(kg) / f"{kg}.ttl"
    path.write_text(ttl, encoding="utf-8")
    store = EmbeddedStore([path])
    return store, kg_lookup(store, kg, JudgesConfig(), timeout_s=30)


@pytest.fixture
def race() -> Callable:
    """`race(work, threads)` runs `work(k)` for k in range(threads) on that many threads at once,
    with a thread switch every microsecond (so interleavings a run's worker threads could meet
    are met), and re-raises a worker's first error."""
    interval = sys.getswitchinterval()

    def run(work: Callable[[int], None], threads: int = 8) -> None:
        failures: list[BaseException] = []

        def worker(k: int) -> None:
            try:
                work(k)
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                failures.append(exc)

        sys.setswitchinterval(1e-6)
        try:
            running = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
            for thread in running:
                thread.start()
            for thread in running:
                thread.join()
        finally:
            sys.setswitchinterval(interval)
        if failures:
            raise failures[0]

    return run
