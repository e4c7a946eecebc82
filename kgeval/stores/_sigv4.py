"""AWS Signature Version 4 for Amazon Neptune (service `neptune-db`), via botocore.

Credentials come from boto3's default chain (environment, shared config and credentials files,
SSO, container and instance roles); they are read when a request is signed, so rotated role
credentials are picked up.
"""

from __future__ import annotations

from collections.abc import Mapping

from kgeval.errors import InputError

SERVICE = "neptune-db"


def sigv4_headers(
    method: str, url: str, body: bytes | None, headers: Mapping[str, str], region: str
) -> dict[str, str]:
    """The headers that sign this request: Authorization, X-Amz-Date, and X-Amz-Security-Token
    with temporary credentials. `headers` are the ones the request will carry and that get signed."""
    import boto3
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest

    credentials = boto3.Session().get_credentials()
    if credentials is None:
        raise InputError(
            "Neptune store: no AWS credentials found in boto3's default chain "
            "(set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or use an instance role)"
        )
    aws_request = AWSRequest(method=method, url=url, data=body or b"", headers=dict(headers))
    SigV4Auth(credentials.get_frozen_credentials(), SERVICE, region).add_auth(aws_request)
    wanted = ("Authorization", "X-Amz-Date", "X-Amz-Security-Token")
    return {name: aws_request.headers[name] for name in wanted if name in aws_request.headers}
