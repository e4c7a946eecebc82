"""Verifies an AWS SigV4 signature on a request a loopback server received, by recomputing it
with botocore from the known test credentials (what Neptune does with IAM authentication)."""

from __future__ import annotations

import hmac

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.stores.loopback import Recorded

ACCESS_KEY = "AKIDKGEVALTEST000001"
SECRET_KEY = "kgeval/test/secret/key/0123456789abcdef"
REGION = "eu-west-1"
SERVICE = "neptune-db"


def _header(request: Recorded, name: str) -> str | None:
    for key, value in request.headers.items():
        if key.lower() == name.lower():
            return value
    return None


def signature_problem(request: Recorded, base_url: str, secret_key: str = SECRET_KEY) -> str | None:
    """None when `request` carries a valid SigV4 signature for the test key; else why not."""
    auth = _header(request, "Authorization")
    if not auth or not auth.startswith("AWS4-HMAC-SHA256 "):
        return "no SigV4 Authorization header"
    fields = dict(part.strip().split("=", 1) for part in auth.removeprefix("AWS4-HMAC-SHA256 ").split(","))
    key_id, date, region, service, terminal = fields["Credential"].split("/")
    if (key_id, region, service, terminal) != (ACCESS_KEY, REGION, SERVICE, "aws4_request"):
        return f"wrong credential scope {fields['Credential']}"
    signed = fields["SignedHeaders"].split(";")
    if not {"host", "x-amz-date"} <= set(signed):
        return f"host and x-amz-date must be signed, got {signed}"
    amz_date = _header(request, "X-Amz-Date") or ""
    if amz_date[:8] != date:
        return "X-Amz-Date does not match the credential date"
    aws = AWSRequest(method=request.method, url=base_url + request.path, data=request.body,
                     headers={name: _header(request, name) or "" for name in signed})
    aws.context["timestamp"] = amz_date
    token = _header(request, "X-Amz-Security-Token")
    signer = SigV4Auth(Credentials(ACCESS_KEY, secret_key, token), SERVICE, REGION)
    expected = signer.signature(signer.string_to_sign(aws, signer.canonical_request(aws)), aws)
    if not hmac.compare_digest(expected, fields["Signature"]):
        return "signature does not match"
    return None
