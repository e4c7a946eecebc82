"""The kgeval service: FastAPI app over a results database, the holdout and its gold."""

from kgeval.service._access import Access, Principal, Role, load_access
from kgeval.service._app import create_app
from kgeval.service._contamination import QuestionTextMatcher, TextMatch, matcher_for
from kgeval.service._state import ServiceSettings, ServiceState

__all__ = [
    "Access",
    "Principal",
    "QuestionTextMatcher",
    "Role",
    "ServiceSettings",
    "ServiceState",
    "TextMatch",
    "create_app",
    "load_access",
    "matcher_for",
]
