"""The kgeval service: FastAPI app over a results database, the holdout and its gold.

Access (tokens, roles, reviewer domains) and the contamination matcher need no web stack; the
app itself needs the `service` extra (fastapi, uvicorn) and is imported on first use.
"""

from kgeval.service._access import Access, Principal, Role, load_access
from kgeval.service._contamination import TextMatcher, matcher_for

__all__ = [
    "Access",
    "Principal",
    "Role",
    "ServiceSettings",
    "ServiceState",
    "TextMatcher",
    "create_app",
    "load_access",
    "matcher_for",
    "raise_open_files",
    "server_options",
    "service_log_config",
]


def __getattr__(name: str):  # noqa: ANN202 - lazy: the web stack is an optional extra
    if name == "create_app":
        from kgeval.service._app import create_app

        return create_app
    if name in ("server_options", "raise_open_files"):
        from kgeval.service import _connections

        return getattr(_connections, name)
    if name == "service_log_config":
        from kgeval.service._middleware import service_log_config

        return service_log_config
    if name in ("ServiceSettings", "ServiceState"):
        from kgeval.service import _state

        return getattr(_state, name)
    raise AttributeError(name)
