"""A bounded load test of the contamination endpoint on a real `kgeval serve` process:
concurrent clients on loopback, no failed request (figures: bench/service.py)."""

from bench.service import run_load, sample_texts
from tests.oversight import TOKENS


def test_concurrent_clients_on_loopback_see_no_failed_request(server, served, capsys):
    texts = sample_texts(served.holdout, 10)
    result = run_load(server, TOKENS["bob"]["token"], texts, clients=8, requests=200)
    with capsys.disabled():
        print(f"\n[bounded load test] {result.summary()}")
    assert result.requests == 200
    assert result.failures == 0, result.errors
    assert result.per_second > 0
    denied = run_load(server, "not-a-token", texts, clients=2, requests=4)
    assert denied.failures == 4  # the load driver does count failures
