"""Who may call the service: tokens, their roles, and reviewers' domains.

Tokens come from an access file (YAML) and the environment; the service keeps only their
sha256. Roles:
- admin: runs, reports, judging, audits (not gold review: signing off gold is a domain
  reviewer's right, kept separate from admin rights);
- auditor: reads runs and reports, judges single answers, draws audit samples and records
  audit decisions;
- reviewer: reads runs and reports, reviews gold of the domains listed (`"*"` for all);
- builder: the contamination check (data builders' pipelines).

Access file:
```yaml
tokens:
  - name: alice
    roles: [reviewer]
    domains: [hr]
    token_env: KGEVAL_TOKEN_ALICE      # or token_sha256: <hex>, or token: <literal, for tests>
```
`KGEVAL_ADMIN_TOKEN` in the environment adds an admin named "admin".

A token is one caller: a token given to two entries (or to an entry and KGEVAL_ADMIN_TOKEN)
is refused when the file is loaded, naming the entries, never resolved by their order.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from kgeval._files import read_yaml
from kgeval.errors import InputError
from kgeval.review import Reviewer

Role = Literal["admin", "auditor", "reviewer", "builder"]


class Principal(BaseModel):
    """An authenticated caller."""

    name: str
    roles: tuple[Role, ...]
    domains: tuple[str, ...] = ()
    """Domains whose gold this caller may review (reviewer role only)."""

    def has(self, *roles: Role) -> bool:
        return any(r in self.roles for r in roles)

    def reviewer(self) -> Reviewer:
        """This caller as a gold reviewer: no domains unless they hold the reviewer role."""
        return Reviewer(name=self.name, domains=self.domains if "reviewer" in self.roles else ())


class TokenEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    roles: tuple[Role, ...]
    domains: tuple[str, ...] = ()
    token: str | None = None
    """The token itself (for tests and local use; prefer token_env or token_sha256)."""
    token_env: str | None = None
    """Name of an environment variable holding the token."""
    token_sha256: str | None = None
    """sha256 (hex) of the token."""

    @model_validator(mode="after")
    def _one_source(self) -> TokenEntry:
        if sum(x is not None for x in (self.token, self.token_env, self.token_sha256)) != 1:
            raise ValueError(f"token entry {self.name!r}: give exactly one of token, token_env, token_sha256")
        return self


class AccessFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tokens: list[TokenEntry] = []


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class Access:
    """Token -> principal, by sha256 of the token."""

    def __init__(self, principals: dict[str, Principal]) -> None:
        self._by_digest = principals

    def __len__(self) -> int:
        return len(self._by_digest)

    def authenticate(self, token: str | None) -> Principal | None:
        if not token:
            return None
        digest = _digest(token)
        for known, principal in self._by_digest.items():
            if hmac.compare_digest(known, digest):
                return principal
        return None


def load_access(path: Path | None, env: Mapping[str, str] | None = None) -> Access:
    """Principals from the access file (if any) and KGEVAL_ADMIN_TOKEN."""
    env = os.environ if env is None else env
    entries: list[TokenEntry] = []
    if path is not None:
        data = read_yaml(Path(path), "access file") or {}  # a file emptied to 0 bytes is damaged, not "no tokens"
        try:
            entries = AccessFile.model_validate(data).tokens
        except ValidationError as exc:
            raise InputError(f"{path}: invalid access file: {exc}") from None
    holders: dict[str, list[tuple[str, Principal]]] = {}
    for i, e in enumerate(entries, start=1):
        digest = (e.token_sha256 or _digest(e.token or _env_token(env, e, path))).lower()
        holders.setdefault(digest, []).append((f"entry {i} ({e.name!r}, roles {', '.join(e.roles)})", Principal(name=e.name, roles=e.roles, domains=e.domains)))
    if env.get("KGEVAL_ADMIN_TOKEN"):
        admin = Principal(name="admin", roles=("admin",))
        holders.setdefault(_digest(env["KGEVAL_ADMIN_TOKEN"]), []).append(("KGEVAL_ADMIN_TOKEN (admin)", admin))
    shared = [[what for what, _ in named] for named in holders.values() if len(named) > 1]
    if shared:
        clashes = "; ".join(" and ".join(group) for group in shared)
        raise InputError(
            f"{path or 'access'}: one token is given to more than one entry ({clashes}): which roles it carries would depend "
            "on the order; give each entry its own token, or merge the entries into one with every role it needs"
        )
    return Access({digest: named[0][1] for digest, named in holders.items()})


def _env_token(env: Mapping[str, str], entry: TokenEntry, path: Path | None) -> str:
    value = env.get(entry.token_env or "")
    if not value:
        raise InputError(f"{path}: token of {entry.name!r}: environment variable {entry.token_env} is not set")
    return value
