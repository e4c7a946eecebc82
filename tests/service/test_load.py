"""A bounded load test of the contamination endpoint on a real `kgeval serve` process:
concurrent clients (each a caller with its own token) on loopback, no failed request (figures:
bench/service.py)."""

from dataclasses import replace

import yaml

from bench.service import BUILDERS, run_load, sample_texts
from tests.service.conftest import running_server


def test_concurrent_clients_on_loopback_see_no_failed_request(served, tmp_path, capsys):
    access = tmp_path / "builders.yaml"
    access.write_text(yaml.safe_dump({"tokens": [{"name": t, "roles": ["builder"], "token": t} for t in BUILDERS[:8]]}), encoding="utf-8")
    texts = sample_texts(served.holdout, 10)
    with running_server(replace(served, access=access), tmp_path) as server:
        result = run_load(server, BUILDERS[:8], texts, clients=8, requests=200)
        denied = run_load(server, "not-a-token", texts, clients=2, requests=4)
    with capsys.disabled():
        print(f"\n[bounded load test] {result.summary()}")
    assert result.requests == 200
    assert result.failures == 0, result.errors
    assert result.per_second > 0
    assert denied.failures == 4  # the load driver does count failures


def test_one_token_from_many_clients_is_held_to_its_share(served, tmp_path):
    """Eight clients on one token: past `service.heavy_per_caller` (1) its calls get 429."""
    access = tmp_path / "builders.yaml"
    access.write_text(yaml.safe_dump({"tokens": [{"name": "one", "roles": ["builder"], "token": BUILDERS[0]}]}), encoding="utf-8")
    with running_server(replace(served, access=access), tmp_path) as server:
        result = run_load(server, BUILDERS[0], sample_texts(served.holdout, 200), clients=8, requests=80)
    assert result.requests == 80 and 0 < result.failures < 80
    assert all(e.startswith("HTTP 429") and "service.heavy_per_caller" in e for e in result.errors)
