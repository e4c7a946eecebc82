"""Neptune SPARQL store: every request is SigV4-signed (service neptune-db) from boto3's default
credential chain.

Amazon Neptune itself cannot run here (no network beyond package registries). These tests send
the store's requests to a loopback HTTP server (plain http, allowed only by the test-only
`allow_insecure_http` switch) that recomputes the signature with botocore from the known test
credentials and answers 403 when it does not match, as Neptune's IAM authentication would. Not
covered: TLS, Neptune's own query engine and its IAM policy evaluation.
"""

from __future__ import annotations

import json

import pytest

from kgeval.config import StoreConfig
from kgeval.errors import InputError, StoreError
from kgeval.stores import open_store
from tests.stores.loopback import ASK_TRUE, Recorded, loopback
from tests.stores.sigv4_verify import REGION, signature_problem

pytestmark = pytest.mark.usefixtures("aws_test_credentials")  # tests/stores/conftest.py


def verifying_neptune(base: list[str]):
    """A handler that answers like Neptune: 403 unless the SigV4 signature verifies."""

    def handle(request: Recorded):
        problem = signature_problem(request, base[0])
        if problem:
            return 403, {"Content-Type": "application/json"}, json.dumps({"code": "AccessDeniedException", "detailedMessage": problem}).encode()
        return ASK_TRUE

    return handle


def neptune_config(url: str) -> StoreConfig:
    return StoreConfig(kind="neptune-sparql", endpoint=url + "/sparql", region=REGION, data_version="neptune-load-1", allow_insecure_http=True)


def test_signed_request_verifies_and_is_answered():
    base: list[str] = []
    with loopback(verifying_neptune(base)) as (url, recorded):
        base.append(url)
        store = open_store(neptune_config(url), [])
        assert store.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1).boolean is True
        assert len(recorded) == 1 and signature_problem(recorded[0], url) is None
        assert store.name == "neptune-sparql" and store.data_sha256 == "neptune-load-1"


def test_unsigned_request_is_rejected():
    base: list[str] = []
    with loopback(verifying_neptune(base)) as (url, recorded):
        base.append(url)
        plain = open_store(StoreConfig(kind="sparql", endpoint=url + "/sparql", data_version="x"), [])
        with pytest.raises(StoreError, match="HTTP 403.*no SigV4 Authorization header"):
            plain.execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)


def test_tampered_request_or_wrong_key_fails_verification():
    with loopback() as (url, recorded):
        open_store(neptune_config(url), []).execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)
    signed = recorded[0]
    assert signature_problem(signed, url) is None
    tampered = Recorded(signed.method, signed.path, signed.headers, signed.body + b"&x=1")
    assert signature_problem(tampered, url) == "signature does not match"
    assert signature_problem(signed, url, secret_key="another-secret") == "signature does not match"
    other_path = Recorded(signed.method, "/sparql2", signed.headers, signed.body)
    assert signature_problem(other_path, url) == "signature does not match"


def test_temporary_credentials_sign_the_session_token(monkeypatch):
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token-xyz")
    with loopback() as (url, recorded):
        open_store(neptune_config(url), []).execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)
    headers = {k.lower(): v for k, v in recorded[0].headers.items()}
    assert headers["x-amz-security-token"] == "session-token-xyz"
    assert "x-amz-security-token" in headers["authorization"]
    assert signature_problem(recorded[0], url) is None


def test_no_credentials_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with loopback() as (url, recorded):
        with pytest.raises(InputError, match="no AWS credentials"):
            open_store(neptune_config(url), []).execute("ASK { ?s ?p ?o }", timeout_s=60, row_cap=1)
        assert recorded == []


def test_neptune_needs_https_and_a_region():
    with pytest.raises(InputError, match="must be https"):
        open_store(StoreConfig(kind="neptune-sparql", endpoint="http://db:8182/sparql", region=REGION, data_version="v"), [])
    with pytest.raises(ValueError, match="region"):
        StoreConfig(kind="neptune-sparql", endpoint="https://db:8182/sparql", data_version="v")
