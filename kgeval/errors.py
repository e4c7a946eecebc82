"""Errors that speak to the user, each with the CLI exit code it maps to.

Exit codes (documented in the README): 0 ok, 1 a failed check, 2 bad usage or bad input,
3 a leak or a gate refusal.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # errors.py imports nothing at run time: every module imports it
    from pydantic import ValidationError


class KgevalError(Exception):
    """Base class: a problem the user can act on, with a message that says where and what."""

    exit_code = 2


class InputError(KgevalError):
    """A file or argument is malformed: the message names the file and the item."""


class DatabaseBusy(KgevalError):
    """Another process holds the results database's lock longer than the configured wait
    (DuckDB lets one process write a file at a time). The service answers 503."""


class CheckFailed(KgevalError):
    """A verification found a mismatch (manifest, gold hash, stale gold)."""

    exit_code = 1


class StaleGold(CheckFailed):
    """The gold is intact but was built for something else: another holdout or reference
    query, another engine or engine version, or another version of the data."""


class QueryError(KgevalError):
    """A SPARQL query could not be run: the subclasses say why."""

    resources: object | None = None
    """What a candidate query cost before it failed (a `kgeval.stores.QueryResources`), set by
    `Store.execute_candidate`; None elsewhere."""


class QuerySyntaxError(QueryError):
    """The query does not parse."""

    def __init__(self, message: str, *, undeclared_prefix: str | None = None) -> None:
        super().__init__(message)
        self.undeclared_prefix = undeclared_prefix
        """The prefix the query uses without declaring it, when that is why (no engine's implicit
        prefixes are assumed); the importer's `--prefix` can declare it."""


def undeclared_prefix(prefix: str) -> QuerySyntaxError:
    """The error for a query that uses `prefix:` without declaring it."""
    return QuerySyntaxError(
        f"SPARQL does not parse: prefix {prefix}: is not declared (add PREFIX {prefix}: <...>; a production endpoint that "
        "predeclares it is mirrored with store.predeclared_prefixes)",
        undeclared_prefix=prefix,
    )


class QueryRefused(QueryError):
    """The read-only guard refused the query (update, SERVICE, size) before any store saw it."""


class EngineFunctionRefused(QueryRefused):
    """Refused for naming an engine's own function or procedure (Virtuoso's `bif:`, a call outside
    the callable namespaces): a query valid for the engine it was written for, which the guard
    will not run. A benchmark's reference query refused so is imported as written (and fails at
    `gold rebuild`); an update or SERVICE is not a question at all."""


class QueryTimeout(QueryError):
    """The query ran longer than its timeout."""


class QueryOverBudget(QueryError):
    """The query exceeded a resource budget other than time (memory, rows produced) set for
    untrusted candidate queries: the query's cost, not a fault of the store."""


class StoreError(QueryError):
    """The store failed while executing a query (engine or transport error). A run counts it
    as the harness's failure, unless it is a `QueryRejected` or the store, asked at once, runs
    other queries (then the query is at fault: see kgeval.runs' candidate execution)."""

    def __init__(self, message: str, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.http_status = http_status
        """The HTTP status a remote store answered with, when it answered."""


class QueryRejected(StoreError):
    """The engine itself rejected the query as written (its syntax, an unknown function, an
    undeclared prefix): the store is up and answered, and the query is at fault. A run scores it
    as the candidate's invalid SPARQL, never as a harness failure."""


class LeakDetected(KgevalError):
    """Holdout material was found where it must not be, or a KG is too close to training."""

    exit_code = 3


def first_validation_error(exc: ValidationError) -> str:
    """The first error of a pydantic ValidationError as `field.path: message`."""
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"])
    return f"{where}: {err['msg']}" if where else err["msg"]
