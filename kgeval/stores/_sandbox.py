"""Candidate queries of the embedded store run in worker processes (DESIGN invariant 12).

pyoxigraph cannot interrupt a query, a query can abort the process (forty CONCAT doublings) or
take all memory (GROUP_CONCAT over a cross product), and pyoxigraph's SERVICE support makes
requests. So a candidate query runs in a worker process (`_worker`) that has loaded the KG
once, has no network, has a memory limit, and is killed at the query's deadline and replaced.
Workers start when first needed (at most `workers` per store) and serve many queries each: the
cost per query is one round trip of plain tuples over a socketpair.

On Linux a pool's workers are forked from one template process (`_Template`): a process that
loaded the KG and only forks workers, which start with the KG loaded (copy-on-write). A worker
then costs a fork (~3 ms of CPU), not an interpreter start and a KG load. Every template is in
turn forked from this process's zygote (`_zygote`): a worker started as a fresh `python -I -S`
(no network, dies with this process) that imported the engine and loaded nothing, so a template
costs a fork and its KG's load, not an interpreter start (~60 ms of CPU each); the template sets
its memory limit once loaded. Neither holds anything of this process; each worker has its own
stderr, dies with its template (which dies with the zygote), and is reaped by it only when this
process asks, so the pidfd held for it never signals another process. A template or zygote that
died is started again.

The deadline starts when a worker takes the query (waiting for a free worker is not the
query's time), so a verdict never depends on what else was in flight.
"""

from __future__ import annotations

import marshal
import os
import pickle
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pyoxigraph

import kgeval
from kgeval import errors
from kgeval.config import CandidateQueryConfig
from kgeval.errors import QueryError, QueryOverBudget, QueryTimeout, StoreError
from kgeval.stores import _worker
from kgeval.stores._engine import Answer, ProbeRows, Values

_STORES_DIR = str(Path(_worker.__file__).parent)
# where the worker finds kgeval and pyoxigraph (it starts without `site`: see `_worker`)
_IMPORT_DIRS = list(dict.fromkeys(str(Path(m.__file__).resolve().parent.parent) for m in (kgeval, pyoxigraph)))
# Workers die with the thread that started them (PR_SET_PDEATHSIG): one long-lived thread
# starts them all, so a worker never dies because a run's or a request's thread ended.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kgeval-sandbox-spawner")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# Workers started ahead load their KG a few at a time, in the order asked, leaving one core to
# the process that asked: loading is CPU work, so eight workers loading together on two cores
# were not ready sooner, and took the cores from the run's own start (its gold verification
# got a third of a core: a 0.4 s longer start on the bench of bench/run.py). A query that finds
# no worker starts its own at once, outside this gate, and a pool's start ahead leaves the queue
# as soon as a query of its pool waits (on a loaded machine the queue fell behind the run).


class _StartGate:
    """At most `slots` workers started ahead load at once. A start waits for a slot without
    polling (forty waiting starts polling every 10 ms took the interpreter lock from the run
    thousands of times a second on a holdout of twenty KGs), and goes at once, slot or not, when
    a query of its pool is waiting for a worker (`wake` tells it)."""

    def __init__(self, slots: int) -> None:
        self._slots = slots
        self._queue: list[object] = []
        """The starts waiting, first come first served."""
        self._cond = threading.Condition()

    def enter(self, urgent: Callable[[], bool]) -> bool:
        """Wait for a slot and this start's turn, or until `urgent()`; True when a slot was
        taken (`leave` gives it back), False when the start goes without one."""
        turn = object()
        with self._cond:
            self._queue.append(turn)
            try:
                while not (self._slots and self._queue[0] is turn):
                    if urgent():
                        return False
                    self._cond.wait()
                self._slots -= 1
                return True
            finally:
                self._queue.remove(turn)
                if self._slots and self._queue:
                    self._cond.notify_all()  # the next in line may go too

    def leave(self) -> None:
        with self._cond:
            self._slots += 1
            self._cond.notify_all()

    def wake(self) -> None:
        """A query began to wait: the starts of its pool go now."""
        with self._cond:
            self._cond.notify_all()


_START_AHEAD_GATE = _StartGate(max(1, _cores() - 1))
_STDERR_TAIL = 600
_NAMED_ERRORS = {
    name: getattr(errors, name)
    for name in ("QueryRejected", "QueryOverBudget", "QuerySyntaxError", "QueryRefused", "EngineFunctionRefused", "QueryTimeout", "StoreError")
    if hasattr(errors, name)
}


@dataclass(frozen=True)
class WorkerReply:
    """A worker's answer with what it cost."""

    answer: Answer | Values | ProbeRows | None
    """`Values` when the request asked for bare values, `ProbeRows` for a probe, else `Answer`;
    None for a later execution whose terms were the first's (`WorkerPool.run_all`)."""
    wall_ms: float
    """From sending the query to receiving the answer."""
    peak_memory_bytes: int | None
    """The worker's peak resident memory during the query (the loaded KG included)."""


class WorkerPool:
    """Worker processes serving one KG's candidate queries, at most `config.workers` of them.

    Or several KGs' (`files` a mapping: name -> that KG's files, `graphs` name -> its graphs):
    one template loads them all, each in a store of its own, and a request names the KGs it
    runs on (`targets`, `run_each`): a holdout KG's neighbours are so one template and its
    workers, not one per neighbour, and a query runs on a suite's neighbours in one request.
    `file_sha256` is then a mapping too: name -> the hashes of that KG's files."""

    def __init__(
        self,
        files: Sequence[Path] | Mapping[str, Sequence[Path]],
        file_sha256: Sequence[str] | Mapping[str, Sequence[str]],
        config: CandidateQueryConfig,
        label: str,
        graphs: Mapping[str, str] | Mapping[str, Mapping[str, str]] | None = None,
        *,
        lenient: bool = False,
    ) -> None:
        """`lenient`: the workers parse the files without validating their terms
        (`_engine.load_kg`): only for files kgeval wrote whose `file_sha256` come from a verified
        manifest, which every worker's files must hash to (`_check_data`)."""
        self._lenient = lenient
        self._files: list[str] | dict[str, list[str]] = (
            {name: [str(Path(f).resolve()) for f in paths] for name, paths in files.items()}
            if isinstance(files, Mapping) else [str(Path(f).resolve()) for f in files]
        )  # fmt: skip
        self._graphs = {k: dict(v) if isinstance(v, Mapping) else v for k, v in (graphs or {}).items()}
        """File name -> the named graph it came from (`_engine.load_kg`); per KG name for several."""
        self.kg_file_sha256 = {name: list(hashes) for name, hashes in file_sha256.items()} if isinstance(file_sha256, Mapping) else {}
        """Name -> the hashes of that KG's files (a pool of several KGs)."""
        self._file_sha256 = [h for hashes in self.kg_file_sha256.values() for h in hashes] if isinstance(file_sha256, Mapping) else list(file_sha256)
        self._config = config
        self._label = label
        self._idle: list[_Worker] = []
        self._all: set[_Worker] = set()
        self._started = 0
        self._free = threading.Condition()
        self._closed = False
        self._waiting = 0
        """Queries waiting for a worker of this pool (its starts ahead then skip the gate's queue)."""
        self._template: _Template | None = None
        self._template_lock = threading.Lock()
        self.network_isolated: bool | None = None
        """Whether the workers run without network (None until one has started)."""

    def run(self, request: tuple[Any, ...], timeout_s: float) -> WorkerReply:
        """Send one query to a free worker; its answer, or the named error it raised."""
        return self.run_all(request, timeout_s)[0]

    def run_all(self, request: tuple[Any, ...], timeout_s: float) -> list[WorkerReply]:
        """Send one query to a free worker; its answer for each execution the request asks for
        (its `executions` field; a later one's answer None when the worker found its terms the first's),
        each within `timeout_s` of the one before, or the named error the first that failed raised."""
        replies, error = self.run_each(request, timeout_s)
        if error is not None:
            raise error
        return replies

    def run_each(self, request: tuple[Any, ...], timeout_s: float) -> tuple[list[WorkerReply], QueryError | None]:
        """`run_all`, the answers before the first failure kept: the replies received, and the
        named error of the execution that failed (None when none did). Each execution has its
        own deadline (`timeout_s` from the reply before), CPU backstop and memory budget, as one
        of its own request has; a worker killed at a deadline or ended by a query is replaced,
        as after any query. A request naming several KGs (`targets`) gets an answer per KG, in
        their order, each KG's executions together."""
        worker = self._acquire()
        healthy, replies, error = False, [], None
        kind = Values if request[7] else ProbeRows if request[8] is not None else Answer
        executions = request[9]
        count = executions * (len(request[10]) if len(request) > 10 and request[10] is not None else 1)
        try:
            started = time.perf_counter()
            for index in range(count):
                more = index + 1 < count
                try:
                    if index == 0:
                        worker.send(request)
                    message = worker.receive(timeout_s, self._config.memory_mb << 20, len(kind._fields), later=index % executions > 0, more=more)
                except QueryError as exc:  # timed out or ended by the query: the worker is not reused
                    error = exc
                    break
                if message[0] == "error":
                    healthy = not message[4]  # a retiring worker exits after its reply
                    _, name, text, _peak, _retiring = message
                    error = _NAMED_ERRORS.get(name, StoreError)(text if name in _NAMED_ERRORS else f"sandbox worker failed: {name}: {text}")
                    break
                _, answer, peak = message
                replies.append(WorkerReply(None if answer is None else kind(*answer), (time.perf_counter() - started) * 1000, peak))
                started = time.perf_counter()
            else:
                healthy = True
        finally:
            self._release(worker, healthy)
        return replies, error

    def start_ahead(self, count: int) -> None:
        """Start up to `count` workers (at most `workers`, those running included) in background
        threads and leave them idle, so the first queries do not wait for a worker to load the KG:
        a run calls it before it loads its gold, for its KGs in the order it asks them. They load
        a few at a time across every pool (`_START_AHEAD_GATE`). A worker that fails to start is
        dropped silently; the query that needs one then starts its own and reports why it cannot."""
        with self._free:
            wanted = max(0, min(count, self._config.workers) - self._started)
            self._started += wanted
        for _ in range(wanted):
            threading.Thread(target=self._start_idle, daemon=True, name="kgeval-sandbox-start").start()

    def _start_idle(self) -> None:
        # waits its turn, unless a query of this pool is waiting for a worker: then it goes at once
        gated = _START_AHEAD_GATE.enter(lambda: self._waiting > 0)
        try:
            with self._free:
                closed = self._closed
                if closed:  # closed while this start waited for its turn
                    self._started -= 1
            if closed:
                return
            try:
                worker = self._new_worker()
            except BaseException:  # noqa: BLE001 - reported by the query that starts the next one
                return
        finally:
            if gated:
                _START_AHEAD_GATE.leave()
        with self._free:
            closed = self._closed
            if closed:  # the pool closed while this worker loaded: nobody else would stop it
                self._all.discard(worker)
                self._started -= 1
        if closed:
            worker.kill()
            return
        self._release(worker, True)

    def worker_pids(self) -> list[int]:
        """Process ids of the live workers (tests check a killed one is gone)."""
        with self._free:
            return sorted(w.pid for w in self._all)

    def close(self) -> None:
        """Stop every worker (idle or busy), then the template. Every worker is signalled before
        any is waited for, so they end together, not one after another."""
        with self._free:
            self._closed = True
            workers, self._all, self._idle = list(self._all), set(), []
        for worker in workers:
            worker.signal_kill()
        for worker in workers:
            worker.kill()
        with self._template_lock:
            template, self._template = self._template, None
        if template is not None:
            template.kill()

    def _acquire(self) -> _Worker:
        with self._free:
            while True:
                while not self._idle and self._started >= self._config.workers:
                    self._waiting += 1
                    _START_AHEAD_GATE.wake()  # this pool's starts still queued go now
                    try:
                        self._free.wait()
                    finally:
                        self._waiting -= 1
                if not self._idle:
                    break
                worker = self._idle.pop()
                if worker.process.poll() is None:
                    return worker
                self._all.discard(worker)  # died while idle (killed from outside): never blamed on a query
                self._started -= 1
            self._started += 1
        return self._new_worker()

    def _new_worker(self) -> _Worker:
        """A started worker that loaded this pool's KG (counted in `_started` by the caller)."""
        try:
            worker = self._started_worker()
        except BaseException:
            with self._free:
                self._started -= 1
                self._free.notify()
            raise
        self._check_data(worker)
        with self._free:
            self._all.add(worker)
            self.network_isolated = worker.network_isolated
        return worker

    def _started_worker(self) -> _Worker:
        """A worker forked from this pool's template (started first, or again if it died), or,
        where the platform cannot fork one safely, a worker started on its own."""
        if not _CAN_FORK:
            return _Worker.start(self._files, self._config, self._label, graphs=self._graphs, lenient=self._lenient)
        return _fork(self._live_template, self._forget_template, self._config, self._label, "template process ended while forking a worker")

    def _forget_template(self, template: _Template) -> None:
        """Drop a template whose channel broke (the next worker starts a fresh one)."""
        with self._template_lock:
            if self._template is template:
                self._template = None
        template.kill()

    def _live_template(self) -> _Template:
        with self._template_lock:
            if self._closed:
                raise StoreError(f"{self._label}: the store was closed")
            if self._template is None or self._template.process.poll() is not None:
                self._template = _Template.start(self._files, self._graphs, self._config, self._label, self._lenient)
            return self._template

    def _release(self, worker: _Worker, healthy: bool) -> None:
        if not healthy:
            worker.kill()  # timed out, died, or half-way through a message: never reused
        with self._free:
            if healthy and worker in self._all:
                self._idle.append(worker)
            else:
                self._all.discard(worker)
                self._started -= 1
            self._free.notify()

    def _check_data(self, worker: _Worker) -> None:
        if worker.file_sha256 != self._file_sha256:
            worker.kill()
            with self._free:
                self._started -= 1
                self._free.notify()
            paths = [p for ps in self._files.values() for p in ps] if isinstance(self._files, dict) else self._files
            raise files_changed(self._label, next((p for p, a, b in zip(paths, worker.file_sha256, self._file_sha256) if a != b), None))


def files_changed(label: str, path: str | None = None) -> StoreError:
    """The error for KG files that no longer hash as they did when their store opened (the data
    version it reports, or the hashes it was given: a manifest's): a worker or a local copy
    loaded from them would answer from other data. `path`: the first file that differs."""
    where = f" ({path} does not hash as recorded)" if path else ""
    return StoreError(f"{label}: the KG files changed since the store opened them{where}; reopen the store")


def _cause(stderr_tail: str) -> str:
    """Why a worker died, from the last words the engine wrote."""
    if "memory allocation of" in stderr_tail:
        return "an allocation failed: the query needed more than the worker's memory budget (store.candidates.memory_mb)"
    if "overflowed its stack" in stderr_tail:
        return "the engine overflowed its stack (the query nests too deeply)"
    lines = [line.strip() for line in stderr_tail.splitlines() if line.strip()]
    return f"memory, stack or CPU exhausted; its last words: {lines[-1][:200]}" if lines else "memory, stack or CPU exhausted"


class _Worker:
    """One worker process and its end of the socketpair."""

    def __init__(self, process: subprocess.Popen, conn: Connection, stderr: Any, label: str) -> None:
        self.process = process
        self.pid = process.pid
        self.conn = conn
        self._stderr = stderr
        self._label = label
        self.network_isolated = False
        self._kill_lock, self._killed = threading.Lock(), False
        self.file_sha256: list[str] = []
        self.gc_frozen = 0
        """Objects the process holds frozen out of its collector's sight when it said ready
        (inherited from the template or zygote it was forked from; `_worker._fork_workers`)."""
        self._poller = select.poll()
        self._poller.register(conn.fileno(), select.POLLIN)

    @classmethod
    def start(
        cls, files: list[str], config: CandidateQueryConfig, label: str, kind: str = "load", graphs: Mapping[str, str] | None = None, lenient: bool = False
    ) -> _Worker:
        ours, theirs = socket.socketpair()
        stderr = tempfile.TemporaryFile()
        try:
            process = _SPAWNER.submit(
                subprocess.Popen,
                [sys.executable, "-I", "-S", "-c", _worker.BOOTSTRAP, _STORES_DIR, str(theirs.fileno()), str(os.getpid()), *_IMPORT_DIRS],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=stderr,
                start_new_session=True,  # a Ctrl-C meant for the run must not kill a worker mid-query
                env={**os.environ, "RUST_BACKTRACE": "0"},
            ).result()
        except OSError as exc:
            ours.close()
            raise StoreError(f"{label}: cannot start a sandbox worker: {exc}") from None
        finally:
            theirs.close()
        worker = cls(process, Connection(ours.detach()), stderr, label)
        worker._load(files, graphs or {}, config, kind, lenient)
        return worker

    def _load(self, files: list[str], graphs: Mapping[str, str], config: CandidateQueryConfig, kind: str = "load", lenient: bool = False) -> None:
        try:
            self.conn.send((kind, files, dict(graphs), config.memory_mb * 1024 * 1024, lenient))
        except OSError:
            pass  # the wait below says why
        self.await_ready(config)

    def await_ready(self, config: CandidateQueryConfig) -> None:
        """The worker's "ready" (it has the KG); StoreError naming why when it does not come."""
        ready = False
        try:
            ready = self.conn.poll(config.worker_start_timeout_s)
            message = self.conn.recv() if ready else None
        except (EOFError, OSError):
            message = None
        if message is None or message[0] != "ready":
            why = message[2] if message else self.exit_description() if ready else f"not ready after {config.worker_start_timeout_s:g} s"
            self.kill()
            raise StoreError(f"{self._label}: a sandbox worker could not load the KG: {why}")
        self.network_isolated = bool(message[1]["network_isolated"])
        self.file_sha256 = list(message[1]["file_sha256"])
        self.gc_frozen = int(message[1].get("gc_frozen", 0))

    def send(self, request: tuple[Any, ...]) -> None:
        """Send `request`, framed as `Connection` frames it, on the descriptor directly (one
        write); QueryOverBudget when the worker is gone (`receive` says why)."""
        payload = pickle.dumps(request)
        try:
            _write_all(self.conn.fileno(), struct.pack("!i", len(payload)) + payload)
        except OSError:
            raise QueryOverBudget(f"the query ended its worker process ({self.exit_description()}); a fresh worker takes the next query") from None

    def receive(self, timeout_s: float, max_reply_bytes: int, answer_fields: int, *, later: bool = False, more: bool = False) -> tuple[Any, ...]:
        """The worker's next reply; QueryTimeout (the worker is killed) or QueryOverBudget (the
        query ended the worker, or its reply is over `max_reply_bytes`: killed) when there is
        none within `timeout_s`; StoreError for a reply of no shape the protocol has (an answer
        of other than `answer_fields` fields; None only for a `later` execution): the caller
        stops the worker. `more`: another reply to the request follows (`_read_reply`).

        Read with a poll on a poller registered once, and one read for a reply that fits in
        `_READ_SIZE` (Connection's poll built a selector per call, and its recv read the length
        and the payload apart)."""
        try:
            if not self._poller.poll(timeout_s * 1000):
                self.kill()  # the engine cannot be interrupted: its process is ended instead
                raise QueryTimeout(f"query ran longer than {timeout_s:g} s (its worker process was stopped)")
            data = _read_reply(self.conn.fileno(), max_reply_bytes, more=more)
        except _ReplyTooLarge as exc:
            self.kill()
            raise QueryOverBudget(f"{exc} (its worker process was stopped)") from None
        except (EOFError, OSError, ConnectionError):
            raise QueryOverBudget(f"the query ended its worker process ({self.exit_description()}); a fresh worker takes the next query") from None
        return _decoded_reply(data, answer_fields, later=later)

    def exit_description(self) -> str:
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        if code is not None and code < 0:
            what = f"signal {signal.Signals(-code).name}" if -code in signal.valid_signals() else f"signal {-code}"
        else:
            what = f"exit code {code}"
        return f"{what}: {_cause(self._stderr_tail())}"

    def _stderr_tail(self) -> str:
        try:
            self._stderr.seek(0, os.SEEK_END)
            size = self._stderr.tell()
            self._stderr.seek(max(0, size - _STDERR_TAIL))
            return self._stderr.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close_channel(self) -> None:
        """Close this end of the channel (the process exits once it reads the end), unless `kill`
        did: one thread closes a descriptor."""
        with self._kill_lock:
            if not self._killed:
                self.conn.close()

    def signal_kill(self) -> None:
        """Send the process SIGKILL and return at once (`kill` then waits for it and closes the
        channel): a pool closing signals all its workers before it waits for any."""
        with self._kill_lock:
            if self._killed:
                return
        if self.process.poll() is None:
            self.process.kill()

    def kill(self) -> None:
        """Kill the process and close its channel, once: a pool closing while a start-ahead
        thread drops the same worker calls this from two threads (two closes of one descriptor
        raised EBADF in the second, a traceback out of a run that stopped on a damaged DB)."""
        with self._kill_lock:
            if self._killed:
                return
            self._killed = True
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()
        try:
            self._stderr.close()
        except OSError:
            pass


_READ_SIZE = 1 << 16
"""Bytes of a reply read at once: its length and its pickle together when it fits."""


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _ReplyTooLarge(Exception):
    """A worker announced a reply larger than the parent reads."""


def _read_reply(fd: int, max_bytes: int, *, more: bool = False) -> bytes:
    """One reply's payload, framed as `Connection` frames it (a 4-byte big-endian signed length;
    -1, then an 8-byte length, past 2 GiB). EOFError when the worker closed its end first; a
    reply followed by more bytes (never sent: a worker answers each execution once) is an
    OSError, so the worker is not reused. When `more` replies to the request follow, exactly
    this reply's bytes are read (the next one's stay in the channel, for the next poll). A
    length over `max_bytes` (the worker's memory budget, which holds every reply it builds) is
    _ReplyTooLarge, before anything is allocated for it."""
    data = os.read(fd, 4 if more else _READ_SIZE)
    while len(data) < 4 or (data[:4] == b"\xff\xff\xff\xff" and len(data) < 12):
        chunk = os.read(fd, ((4 if len(data) < 4 else 12) - len(data)) if more else _READ_SIZE)
        if not chunk:
            raise EOFError("the worker closed the channel")
        data += chunk
    (size,) = struct.unpack_from("!i", data)
    start = 4
    if size == -1:
        (size,) = struct.unpack_from("!Q", data, 4)
        start = 12
    if not 0 <= size <= max_bytes:
        raise _ReplyTooLarge(f"the worker's reply is {size:,} bytes, over the {max_bytes:,} bytes of its memory budget")
    if len(data) > start + size:
        raise OSError("the worker sent more than one reply")
    if len(data) == start + size:
        return data[start:]
    whole = bytearray(size)
    got = len(data) - start
    whole[:got] = data[start:]
    view = memoryview(whole)
    while got < size:
        count = os.readv(fd, [view[got:]])
        if not count:
            raise EOFError("the worker closed the channel mid-reply")
        got += count
    return whole


def _decoded_reply(data: bytes, answer_fields: int, *, later: bool = False) -> tuple[Any, ...]:
    """A worker's marshalled reply (`_worker._Channel.send_reply`), checked to be one of the
    protocol's shapes: ("ok", answer of `answer_fields` fields, peak), ("ok", None, peak) for a
    `later` execution whose terms were the first's, or ("error", class name, message, peak,
    retiring). Unmarshalling builds plain data only (never calls a function, as unpickling
    may), so a worker whose engine a query subverted cannot run code here."""
    try:
        message = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        message = None
    shaped = isinstance(message, tuple) and (
        (len(message) == 3 and message[0] == "ok" and ((isinstance(message[1], tuple) and len(message[1]) == answer_fields) or (later and message[1] is None)))
        or (len(message) == 5 and message[0] == "error" and isinstance(message[1], str) and isinstance(message[2], str))
    )
    if not shaped:
        raise StoreError("a sandbox worker sent a reply the protocol does not have; the worker is stopped and a fresh one takes the next query")
    return message  # type: ignore[return-value]


_CAN_FORK = all(hasattr(m, n) for m, n in ((os, "fork"), (os, "pidfd_open"), (signal, "pidfd_send_signal"), (socket, "send_fds")))
"""Workers are forked from a template where the parent can hold each one by a pidfd (Linux)."""


class _TemplateGone(Exception):
    """The template's control channel broke: it died (a fresh one is started)."""


class _Template:
    """A sandboxed process that loaded one KG and forks query workers from it (`_worker`'s
    `_fork_workers`): a worker then costs a fork, not an interpreter start and a KG load. It is
    started as a worker is (no network, memory limit, dies with the spawner thread) and holds
    nothing of this process: only the KG. It reaps a worker only when asked (`reap`), so the
    pidfd this process holds for each stays bound to that worker."""

    def __init__(self, worker: _Worker) -> None:
        self._worker = worker
        self.process = worker.process
        self._sock = socket.socket(fileno=os.dup(worker.conn.fileno()))
        self._lock = threading.Lock()

    @classmethod
    def start(cls, files: list[str], graphs: Mapping[str, str], config: CandidateQueryConfig, label: str, lenient: bool = False) -> _Template:
        """A template of `files` (`graphs`, `lenient`: see `_engine.load_kg`): forked from this
        process's zygote (started first, or again if it died), where it loads the KG."""
        worker = _fork(lambda: _zygote(config), _forget_zygote, config, label, "zygote process ended while forking a template")
        worker._load(files, graphs, config, "template", lenient)
        return cls(worker)

    def fork(self, config: CandidateQueryConfig, label: str) -> _Worker:
        """A new worker, ready (StoreError when it cannot start; _TemplateGone when the
        template died)."""
        ours, theirs = socket.socketpair()
        stderr = tempfile.TemporaryFile()
        try:
            with self._lock:
                self._send(lambda: socket.send_fds(self._sock, [b"F" + bytes(8)], [theirs.fileno(), stderr.fileno()]))
                kind, pid = self._reply()
            if kind != b"P":
                raise StoreError(f"{label}: the sandbox template could not fork a worker: {os.strerror(pid)}")
            process = _ForkedProcess(pid, os.pidfd_open(pid), self)
        except BaseException:
            ours.close()
            stderr.close()
            raise
        finally:
            theirs.close()
        worker = _Worker(process, Connection(ours.detach()), stderr, label)
        worker.await_ready(config)
        return worker

    def reap(self, pid: int) -> int:
        """The exit code of ended worker `pid`, as Popen gives it (negative: the signal); a
        SIGKILL when the template is gone (its workers die with it, and init reaps them)."""
        try:
            with self._lock:
                self._send(lambda: self._sock.sendall(b"R" + struct.pack("!q", pid)))
                kind, value = self._reply()
        except _TemplateGone:
            return -signal.SIGKILL
        return os.waitstatus_to_exitcode(value) if kind == b"S" else -signal.SIGKILL

    @staticmethod
    def _send(send: Any) -> None:
        try:
            send()
        except OSError:
            raise _TemplateGone() from None

    def _reply(self) -> tuple[bytes, int]:
        data = b""
        try:
            while len(data) < 9:
                chunk = self._sock.recv(9 - len(data))
                if not chunk:
                    raise _TemplateGone()
                data += chunk
        except OSError:
            raise _TemplateGone() from None
        return data[:1], struct.unpack("!q", data[1:])[0]

    def kill(self) -> None:
        self._worker.kill()
        self._sock.close()

    def close(self) -> None:
        """Close the channel: the process exits once it reads the end; killed if it has not
        after 10 s."""
        self._sock.close()
        self._worker.close_channel()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._worker.kill()


_ZYGOTE: _Template | None = None
"""This process's zygote (`_worker`): a sandboxed interpreter that loaded nothing and forks the
templates of every pool, so a template costs a fork and its KG's load, not an interpreter start
(~60 ms of CPU each: a second of a run's CPU over twenty KGs). It holds no KG and runs no query,
dies with the spawner thread as a worker does, and takes its templates with it."""
_ZYGOTE_PID = 0
"""The process that started `_ZYGOTE` (a forked child of this process starts its own)."""
_ZYGOTE_LOCK = threading.Lock()


def _fork(live: Callable[[], _Template], forget: Callable[[_Template], None], config: CandidateQueryConfig, label: str, failure: str) -> _Worker:
    """A process forked by the forker `live()` gives (a pool's template, or the zygote); when
    that forker's channel broke, it is forgotten and a fresh one asked once more."""
    for attempt in (1, 2):
        forker = live()
        try:
            return forker.fork(config, label)
        except _TemplateGone:
            forget(forker)
            if attempt == 2:
                raise StoreError(f"{label}: the sandbox {failure}") from None
    raise AssertionError("unreachable")


def _zygote(config: CandidateQueryConfig) -> _Template:
    global _ZYGOTE, _ZYGOTE_PID
    with _ZYGOTE_LOCK:
        zygote = _ZYGOTE
        if zygote is None or _ZYGOTE_PID != os.getpid() or zygote.process.poll() is not None:
            if zygote is not None and _ZYGOTE_PID == os.getpid():
                zygote.kill()
            zygote = _ZYGOTE = _Template(_Worker.start([], config, "sandbox zygote", kind="zygote"))
            _ZYGOTE_PID = os.getpid()
        return zygote


def stop_zygote() -> None:
    """End this process's zygote once the stores are closed: it exits when its channel closes
    and is reaped here, so its CPU and that of the templates it reaped count in this process's
    RUSAGE_CHILDREN (the benches read them). A template still open dies with it."""
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        zygote, _ZYGOTE = _ZYGOTE, None
        if zygote is None or _ZYGOTE_PID != os.getpid():
            return
    zygote.close()


def _forget_zygote(zygote: _Template) -> None:
    """Drop a zygote whose channel broke (the next template starts a fresh one)."""
    global _ZYGOTE
    with _ZYGOTE_LOCK:
        if _ZYGOTE is zygote:
            _ZYGOTE = None
    zygote.kill()


class _ForkedProcess:
    """A worker forked by a template, as `_Worker` uses a Popen (pid, poll, wait, kill,
    returncode), held by a pidfd: signals reach that worker and no process that reused its pid."""

    def __init__(self, pid: int, pidfd: int, template: _Template) -> None:
        self.pid, self._pidfd, self._template = pid, pidfd, template
        self.returncode: int | None = None
        self._lock = threading.Lock()

    def poll(self) -> int | None:
        return self._wait(0.0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._wait(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"sandbox worker {self.pid}", timeout or 0.0)
        return code

    def kill(self) -> None:
        with self._lock:
            if self.returncode is None:
                try:
                    signal.pidfd_send_signal(self._pidfd, signal.SIGKILL)
                except ProcessLookupError:
                    pass  # ended already; reaped by the next wait

    def _wait(self, timeout: float | None) -> int | None:
        with self._lock:  # one reap, and no select on a pidfd another thread closed
            if self.returncode is None and select.select([self._pidfd], [], [], timeout)[0]:
                self.returncode = self._template.reap(self.pid)
                os.close(self._pidfd)
            return self.returncode
