"""Graph stores and the typed result model they all produce.

Every query goes through the read-only guard (`guard_query`) before it reaches a store.
`Store.execute` runs trusted queries (reference queries, probes), `Store.execute_cells` the same
with plain-tuple rows (`CellResult`, no Term built), `Store.execute_values` a SELECT's values only
(`ValueResult`, not even a cell built); `Store.execute_candidate`
runs what a system under test wrote: bounded by `store.candidates` (the embedded store runs it
in a sandbox worker process) and counted (`QueryResources`).
"""

from kgeval.stores._base import Store, checked_result_bytes
from kgeval.stores._cells import Cell, CellRow, canonical_spelling, cell_spelling, cells_key, order_key
from kgeval.stores._embedded import EmbeddedKgs, EmbeddedStore, rdf_format
from kgeval.stores._engine import ProbeCut, ProbeRows
from kgeval.stores._factory import open_kg_stores, open_store
from kgeval.stores._query import QueryShape, compares_by_order, guard_query, may_name_any, mentioned_iris, query_algebra
from kgeval.stores._results import CellResult, QueryResources, QueryResult, Row, Term, ValueResult, answer_sha256, collect_rows, row_key, rows_from_cells, share_terms, term_cell
from kgeval.stores._rewrite import Determinism, OrderProbe, limited_sub_selects, order_probe, order_variables, query_determinism

__all__ = [
    "Cell",
    "CellResult",
    "CellRow",
    "Determinism",
    "OrderProbe",
    "ProbeCut",
    "ProbeRows",
    "EmbeddedKgs",
    "EmbeddedStore",
    "QueryResources",
    "QueryResult",
    "QueryShape",
    "Row",
    "Store",
    "Term",
    "ValueResult",
    "answer_sha256",
    "canonical_spelling",
    "cell_spelling",
    "checked_result_bytes",
    "cells_key",
    "collect_rows",
    "compares_by_order",
    "guard_query",
    "limited_sub_selects",
    "may_name_any",
    "mentioned_iris",
    "open_kg_stores",
    "open_store",
    "order_key",
    "order_probe",
    "order_variables",
    "query_algebra",
    "query_determinism",
    "rdf_format",
    "row_key",
    "rows_from_cells",
    "share_terms",
    "term_cell",
]
