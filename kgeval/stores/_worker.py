"""A sandbox worker process: loads one KG once, then evaluates candidate queries sent to it.

Started by `_sandbox.WorkerPool` as `python -I -S -c BOOTSTRAP STORES_DIR FD PARENT_PID
IMPORT_DIRS...`: isolated and without `site` (no .pth files, no user or current directory on the
path: `site` alone was a third of a worker's start), with the directories holding kgeval and
pyoxigraph on its path. The bootstrap makes `kgeval.stores` a bare package path, so the worker
imports only this module, `_engine`, `_cells`, `_functions`, `kgeval.errors` and pyoxigraph (a
light process, quick to replace).

Bounds set here, in the worker itself:
- network: the worker leaves the host's network namespace before it loads anything (a new,
  empty one: every connect fails), so no SERVICE clause the guard missed can reach a host.
  Where the kernel refuses (no privilege, no user namespaces), the worker says so at start.
- memory: RLIMIT_AS = the address space after loading the KG + the configured budget. An
  allocation past it aborts the engine (the worker dies: the pool reports it over budget).
- lifetime: it is SIGKILLed when its parent dies (PR_SET_PDEATHSIG), even mid-query; as a
  backstop, RLIMIT_CPU = CPU used so far + a bound per query.

Templates: a worker asked to be a template ("template" instead of "load") loads the KG the
same way, then forks query workers on request (`_fork_workers`): each starts with the KG
loaded (copy-on-write), costing a fork instead of an interpreter start and a KG load. A
forked worker inherits the template's network namespace and memory limit, has its own stderr,
dies with the template (PR_SET_PDEATHSIG), and serves queries exactly as a started worker.

Zygote: a worker asked to be a zygote loads nothing and forks, on request, processes that then
take a first message of their own: each becomes a template of one KG. A process's templates so
cost a fork and their KG's load, not an interpreter start and the imports (~60 ms of CPU each, the
larger part of a template's start on a holdout of small KGs). A template forked from the zygote is
left in the zygote's network namespace, dies with it, and sets its own memory limit once loaded.

Protocol (multiprocessing.connection's framing over a socketpair, plain tuples, pickled but
for a query's reply, which is marshalled: see `_Channel.send_reply`; the worker speaks it with
`_Channel`, since importing multiprocessing cost each worker more CPU than the rest of its
start-up together):
parent -> ("load" | "template" | "zygote", [file paths], {file name: graph IRI}, memory_bytes, lenient); worker -> ("ready", info dict) or ("error", ...);
lenient: the files are parsed without validating their terms (`_engine.load_kg`: files kgeval wrote, checked by their hashes);
several KGs in one worker (a holdout KG's neighbours): {name: [file paths]} and {name: {file name: graph IRI}}, each KG
loaded in a store of its own, asked by name;
info: pid, network_isolated, file_sha256 (of the KG files it loaded), gc_frozen (objects it holds
frozen out of the collector's sight: those it inherited from a template or zygote, which freezes
what it holds before it forks)
parent -> (query, ask, ordered, row_cap, max_value_bytes, max_result_bytes, cpu_backstop_s, values, probe, executions, targets);
both byte caps None for a trusted query (a run's label and vocabulary lookups: no size caps);
values True for a trusted SELECT whose rows are wanted as bare values (`_engine.Values`);
probe None, or a trusted order probe's cut as a `_engine.ProbeCut` tuple (read as far as it needs)
executions: how many times a trusted query runs, one after another (`_engine.evaluate_repeated`;
1 but for the gold's repeated reference queries)
targets (a worker of several KGs): the names of the KGs to run the query on, one after another, each
as the request asks (its caps, row cap, CPU backstop and executions), an error ending them as it ends
executions; None on a worker of one KG
worker -> ("ok", Answer tuple (a Values tuple when values, a ProbeRows tuple for a probe), peak_rss_bytes) or ("error", error
class name, message, peak_rss_bytes, retiring: the worker exits after this reply); one reply per
execution, sent as each ends, a later execution's answer None when its terms are the first's; an
error reply ends them
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import marshal
import os
import pickle
import signal
import struct
import sys
from collections.abc import Iterator

BOOTSTRAP = (
    "import sys, types\n"
    "sys.path[:0] = sys.argv[4:]\n"
    "import kgeval\n"
    "package = types.ModuleType('kgeval.stores')\n"
    "package.__path__ = [sys.argv[1]]\n"
    "sys.modules['kgeval.stores'] = package\n"
    "from kgeval.stores._worker import main\n"
    "main(int(sys.argv[2]), int(sys.argv[3]))\n"
)
_PR_SET_PDEATHSIG = 1
_FIRST_THRESHOLD = 100_000
"""The collector's first threshold while a worker serves queries (kgeval._gc.RareCollections')."""
_CLONE_NEWUSER = 0x10000000
_CLONE_NEWNET = 0x40000000


class _Channel:
    """The worker's end of the socketpair, framed as `multiprocessing.connection.Connection`
    frames messages (the parent's end is one): a 4-byte big-endian signed length (-1, then an
    8-byte length, past 2 GiB), then the pickle."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    def send(self, message: object) -> None:
        self._send_frame(pickle.dumps(message))

    def send_reply(self, message: tuple) -> None:
        """A query's reply, framed as `send` frames but marshalled: the parent reads what a
        worker says after running a query with `marshal`, which builds plain data and nothing
        else (unpickling can call any importable function), and twice as fast to write."""
        self._send_frame(marshal.dumps(message))

    def _send_frame(self, payload: bytes) -> None:
        size = len(payload)
        header = struct.pack("!i", size) if size <= 0x7FFFFFFF else struct.pack("!iQ", -1, size)
        self._write(header + payload)

    def recv(self) -> object:
        (size,) = struct.unpack("!i", self._read(4))
        if size == -1:
            (size,) = struct.unpack("!Q", self._read(8))
        return pickle.loads(self._read(size))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def _read(self, size: int) -> bytes:
        chunks, left = [], size
        while left:
            chunk = os.read(self._fd, left)
            if not chunk:
                raise EOFError("the parent closed the connection")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)


def main(fd: int, parent_pid: int) -> None:
    die_with_parent(parent_pid)
    conn = _Channel(fd)
    isolated = isolate_network()
    from kgeval.stores import _engine  # after leaving the network: pyoxigraph starts no threads before

    _become(conn, fd, _engine, isolated)


def _become(conn: _Channel, fd: int, engine: object, isolated: bool) -> None:
    """Do what the first message asks: load the KG and serve queries ("load"), load it and fork
    query workers ("template"), or load nothing and fork processes that each then do what
    their own first message asks ("zygote")."""
    kind, files, graphs, memory_bytes, lenient = conn.recv()
    assert kind in ("load", "template", "zygote")
    if kind == "zygote":
        info = _ready_info(isolated, [])
        conn.send(("ready", info))
        _fork_workers(fd, None, engine, info)
        return
    try:
        store = _loaded(files, graphs, engine, lenient)
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which names the KG
        conn.send(("error", type(exc).__name__, str(exc), 0, True))
        return
    info = _ready_info(isolated, [_sha256(f) for f in _every_file(files)])
    _limit_memory(memory_bytes)
    conn.send(("ready", info))
    if kind == "template":
        _fork_workers(fd, store, engine, info)
    else:
        _serve(conn, store, engine)


def _loaded(files: list | dict, graphs: dict, engine: object, lenient: bool) -> object:
    """One KG's store; for several KGs (`files` a dict: name -> paths, `graphs` name -> that
    KG's graphs), a dict of stores by name, each KG in its own store."""
    if isinstance(files, dict):
        return {name: engine.load_kg(paths, graphs.get(name, {}), lenient=lenient) for name, paths in files.items()}  # type: ignore[attr-defined]
    return engine.load_kg(files, graphs, lenient=lenient)  # type: ignore[attr-defined]


def _every_file(files: list | dict) -> list:
    return [path for paths in files.values() for path in paths] if isinstance(files, dict) else files


def _ready_info(isolated: bool, file_sha256: list[str]) -> dict:
    """What this process says when ready (see the protocol in the module docstring)."""
    return {"pid": os.getpid(), "network_isolated": isolated, "file_sha256": file_sha256, "gc_frozen": gc.get_freeze_count()}


def _fork_workers(fd: int, store: object, engine: object, info: dict) -> None:
    """A template: fork a query worker for each request, reap the ones the parent asks about.
    A zygote (`store` None) does the same, but what it forks loads a KG of its own first.

    Control messages are 9 bytes, a command and a signed 64-bit number: "F" with two
    descriptors attached (the worker's end of its socketpair, the file for its stderr) forks a
    worker and answers "P" + its pid; "R" + pid waits for that (ended) worker and answers "S" +
    its wait status; "E" + errno answers a failure. A template reaps a worker only when asked,
    so its pid is not reused while the parent may still signal it. The template itself runs no
    query; it ends when the parent closes the channel (its workers then end with it:
    PR_SET_PDEATHSIG)."""
    import socket

    # what this process holds now (the engine, the KG's store object, the modules) is out of
    # the collector's sight: a collection in a forked child would otherwise write to the
    # header of every object inherited, and each page so written is copied (measured on the
    # 20-KG replay: 17% fewer page faults in the workers, a sixth less of their CPU)
    gc.freeze()
    control = socket.socket(fileno=fd)
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(control, 9, 2)
            while message and len(message) < 9:
                more = control.recv(9 - len(message))
                message = message + more if more else b""
        except OSError:
            return
        if len(message) < 9:
            return  # the parent is gone
        command, (number,) = message[:1], struct.unpack("!q", message[1:])
        if command == b"F" and len(fds) == 2:
            control.sendall(_fork_one(fds[0], fds[1], fd, store, engine, info))
        elif command == b"R" and not fds:
            control.sendall(_reap(number))
        else:
            for extra in fds:
                os.close(extra)
            control.sendall(b"E" + struct.pack("!q", 22))  # EINVAL


def _fork_one(worker_fd: int, stderr_fd: int, control_fd: int, store: object, engine: object, info: dict) -> bytes:
    template_pid = os.getpid()
    try:
        pid = os.fork()
    except OSError as exc:
        os.close(worker_fd)
        os.close(stderr_fd)
        return b"E" + struct.pack("!q", exc.errno or 0)
    if pid == 0:
        _run_forked(worker_fd, stderr_fd, control_fd, template_pid, store, engine, info)
    os.close(worker_fd)
    os.close(stderr_fd)
    return b"P" + struct.pack("!q", pid)


def _run_forked(worker_fd: int, stderr_fd: int, control_fd: int, template_pid: int, store: object, engine: object, info: dict) -> None:
    """A forked worker: its own stderr, killed when the template dies, then serving queries
    as a started worker does (the memory limit is the template's, inherited); forked by the
    zygote, a template that loads its KG and sets its own memory limit. Never returns."""
    code = 1
    try:
        os.close(control_fd)
        os.dup2(stderr_fd, 2)
        os.close(stderr_fd)
        die_with_parent(template_pid)
        conn = _Channel(worker_fd)
        conn.send(("ready", _ready_info(info["network_isolated"], info["file_sha256"])))
        if store is None:  # forked by the zygote: becomes what its next message asks (a template)
            _become(conn, worker_fd, engine, info["network_isolated"])
        else:
            _serve(conn, store, engine)
        code = 0
    except SystemExit as exc:  # _serve's exit after a query that may have broken the heap
        code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os._exit(code)  # never back into the template's loop


def _reap(pid: int) -> bytes:
    try:
        _, status = os.waitpid(pid, 0)
    except OSError as exc:
        return b"E" + struct.pack("!q", exc.errno or 0)
    return b"S" + struct.pack("!q", status)


def _serve(conn: _Channel, store: object, engine: object) -> None:
    status = _open_status()  # opened by the process that serves: /proc/self is its own
    # collections every 100,000 net allocations, not 700, as kgeval._gc's RARE_COLLECTIONS in
    # the process that asks: a query's cells and keys are short-lived containers freed by
    # reference counting, and a young collection every 700 of them cost a fifth of converting
    # a 2,500-row result (cyclic garbage, rare: a failed query's traceback, waits longer)
    gc.set_threshold(_FIRST_THRESHOLD, *gc.get_threshold()[1:])
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent is gone
            return
        answers = _answers(request, store, engine)
        while True:  # one reply per execution the request asks for, each sent as it is made
            _limit_cpu(request[6])
            _reset_peak_memory()
            try:
                answer = next(answers, _DONE)
            except MemoryError:
                conn.send_reply(("error", "QueryOverBudget", "the query ran out of the worker's memory budget", _peak_memory(status), True))
                sys.exit(3)  # the heap may be in any state: the pool starts a fresh worker
            except Exception as exc:  # noqa: BLE001 - every failure goes back by its class name
                conn.send_reply(("error", type(exc).__name__, str(exc), _peak_memory(status), False))
                break  # no later execution: the parent stops at the first failure
            except BaseException as exc:  # pyo3's PanicException: the engine panicked on this query
                conn.send_reply(("error", type(exc).__name__, str(exc)[:500], _peak_memory(status), True))
                sys.exit(3)
            if answer is _DONE:
                break
            conn.send_reply(("ok", None if answer is None else tuple(answer), _peak_memory(status)))


_DONE = object()


def _answers(request: tuple, store: object, engine: object) -> Iterator[tuple | None]:
    """The answers to one request (see the protocol): one, or one per execution asked for; on a
    worker of several KGs, those of each KG the request names, one KG after another."""
    targets = request[10] if len(request) > 10 else None
    if targets is None:
        yield from _answers_on(request, store, engine)
        return
    for name in targets:
        yield from _answers_on(request, store[name], engine)  # type: ignore[index]


def _answers_on(request: tuple, store: object, engine: object) -> Iterator[tuple | None]:
    query, ask, ordered, row_cap, max_value, max_result, _, values, probe, executions = request[:10]
    if values:  # a trusted SELECT read as bare values (no caps: never a candidate's)
        yield engine.evaluate_values(store, query, ordered=ordered, row_cap=row_cap)  # type: ignore[attr-defined]
    elif probe is not None:  # a trusted order probe (no caps either)
        yield engine.evaluate_probe(store, query, engine.ProbeCut(*probe), row_cap=row_cap)  # type: ignore[attr-defined]
    elif executions > 1:  # a trusted query executed again and again (the gold's determinism check)
        yield from engine.evaluate_repeated(store, query, ask=ask, ordered=ordered, row_cap=row_cap, executions=executions)  # type: ignore[attr-defined]
    else:
        caps = None if max_value is None else engine.Caps(max_value, max_result)  # type: ignore[attr-defined]
        yield engine.evaluate(store, query, ask=ask, ordered=ordered, row_cap=row_cap, caps=caps)  # type: ignore[attr-defined]


def die_with_parent(parent_pid: int) -> None:
    """SIGKILL this worker when the thread that started it ends (the pool starts workers from
    one thread that lives as long as its process), even in the middle of a query."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the CPU backstop and EOF still end it
        pass
    if os.getppid() != parent_pid:  # the parent died before the request was made
        os._exit(0)


def isolate_network() -> bool:
    """Move this process into a new, empty network namespace; True when that worked."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return False
    if libc.unshare(_CLONE_NEWNET) == 0:  # privileged (root in a container, CAP_SYS_ADMIN)
        return True
    return libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET) == 0  # unprivileged user namespaces


def _limit_memory(budget_bytes: int) -> None:
    import resource

    size = _status_kb("VmSize") * 1024
    if not size:  # no /proc (not Linux): no reference point for a budget
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = size + budget_bytes
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _limit_cpu(backstop_s: int) -> None:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _, hard = resource.getrlimit(resource.RLIMIT_CPU)
    soft = used + backstop_s
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (soft, hard))


def _reset_peak_memory() -> None:
    """Reset VmHWM to the current RSS (Linux >= 4.0), through a descriptor kept open: opening
    /proc/self/clear_refs cost more than the write, on every query."""
    global _CLEAR_REFS
    if _CLEAR_REFS == -1:
        return
    try:
        if _CLEAR_REFS is None:
            _CLEAR_REFS = os.open("/proc/self/clear_refs", os.O_WRONLY)
        os.write(_CLEAR_REFS, b"5")
    except OSError:
        _CLEAR_REFS = -1  # no such file (not Linux): never tried again
        return


_CLEAR_REFS: int | None = None


def _open_status() -> int | None:
    """A descriptor on this process's /proc/self/status, read again with `pread` on every query
    (opening the file each time made a read take 24 us instead of 10); None where there is none."""
    try:
        return os.open("/proc/self/status", os.O_RDONLY)
    except OSError:
        return None


def _peak_memory(status: int | None) -> int | None:
    peak = _status_kb("VmHWM", status)
    return peak * 1024 if peak else None


def _status_kb(field: str, descriptor: int | None = None) -> int:
    """A field of /proc/self/status in kB (read through `descriptor` when given, from its start:
    the kernel writes the file afresh); 0 where there is none (read as bytes: decoding the whole
    file line by line cost twice as much, on every query)."""
    try:
        if descriptor is None:
            with open("/proc/self/status", "rb") as handle:
                status = handle.read()
        else:
            status = os.pread(descriptor, 1 << 16, 0)
    except OSError:
        return 0
    start = status.find(b"\n" + field.encode() + b":")
    if start < 0:
        return 0
    line = status[start + len(field) + 2 : status.find(b"\n", start + 1)].split()
    try:
        return int(line[0])
    except (ValueError, IndexError):
        return 0


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
