"""Acceptance figures for the report's statistics, consistency, and the HTML page."""

import re

import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from kgeval.reports import (
    Accuracy,
    build_report,
    clopper_pearson_lower,
    mcnemar_exact_pvalue,
    paired_difference_interval,
    render_html,
    render_markdown,
    wilson_interval,
)
from kgeval.runs import ResultsDB
from tests.oversight import run_system, synthetic_run


def test_wilson_acceptance_value():
    low, high = wilson_interval(277, 302)
    assert (round(low, 4), round(high, 4)) == (0.8807, 0.9433)


def test_both_intervals_are_statsmodels_bit_for_bit():
    """kgeval computes the two intervals without importing statsmodels (1.4 CPU-s per report):
    every count up to 120 trials and counts of large runs give statsmodels' very floats."""
    cases = [(k, n) for n in range(1, 121) for k in range(n + 1)]
    cases += [(k, n) for n in (302, 1000, 5000, 20000, 100000) for k in (0, 1, 2, n // 7, n // 2, n - 2, n - 1, n)]
    for alpha in (0.05, 0.1):
        for k, n in cases:
            assert wilson_interval(k, n, alpha) == proportion_confint(k, n, alpha=alpha, method="wilson"), (k, n, alpha)
            assert clopper_pearson_lower(k, n, alpha) == proportion_confint(k, n, alpha=alpha, method="beta")[0], (k, n, alpha)


def test_the_default_critical_value_is_scipys():
    """The 95% interval uses a constant instead of importing scipy: it is scipy's very float."""
    from scipy.special import ndtri

    from kgeval.reports._stats import CRITICAL_95

    assert CRITICAL_95 == float(-ndtri(0.025))


def test_clopper_pearson_15_of_15_is_0782():
    # the lower end of the two-sided 95% exact interval = one-sided 97.5%: 0.025 ** (1/15)
    assert round(clopper_pearson_lower(15, 15), 3) == 0.782
    assert clopper_pearson_lower(15, 15) == pytest.approx(0.025 ** (1 / 15))
    # a one-sided 95% bound would be 0.819: that is not what we report
    assert round(clopper_pearson_lower(15, 15, alpha=0.10), 3) == 0.819
    assert Accuracy.of(15, 15).at_least == pytest.approx(0.782, abs=5e-4)
    assert clopper_pearson_lower(7, 10) == pytest.approx(proportion_confint(7, 10, method="beta")[0])


def test_paired_interval_matches_altman_worked_example():
    # Altman et al. (2000), table 6.2: [[14, 5], [0, 22]] -> difference 0.122, 95% CI 0.0115 to 0.2265
    low, high = paired_difference_interval(14, 0, 5, 22)  # B - A, with B the table's first classification
    assert (round(low, 4), round(high, 4)) == (0.0115, 0.2265)
    low, high = paired_difference_interval(10, 0, 0, 0)
    assert low < 0 < high  # no discordance: the interval does not collapse to zero width


def test_mcnemar_exact_matches_statsmodels():
    assert mcnemar_exact_pvalue(1, 9) == pytest.approx(mcnemar([[5, 1], [9, 5]], exact=True).pvalue)
    assert mcnemar_exact_pvalue(0, 0) == 1.0


def test_consistency_across_seeds_and_its_refusal(tmp_path):
    with ResultsDB(tmp_path / "r.duckdb") as db:
        synthetic_run(db, "three", {"q1": [True, True, True], "q2": [True, False, True], "q3": [False, False, False]})
        synthetic_run(db, "one", {"q1": [True], "q2": [False]})
        three, one = build_report(db, "three"), build_report(db, "one")
    assert three.consistency.questions == 3
    assert (three.consistency.consistent.correct, three.consistency.consistent.n) == (2, 3)
    assert [q.question_id for q in three.consistency.inconsistent] == ["q2"]
    assert "q2: 2 of 3 seeds correct" in render_markdown(three)
    assert one.consistency.refused and "one seed" in one.consistency.refused
    assert "refused (one seed" in render_markdown(one)


def test_html_page_is_self_contained_with_a_plot_per_kg(mini_holdout, mini_gold, tmp_path):
    run_id = run_system(mini_holdout, mini_gold, tmp_path / "r.duckdb", "weak")
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as db:
        report = build_report(db, run_id, gold_dir=mini_gold)
    page = render_html(report)
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and page.count("<svg") >= 1
    assert not re.search(r"""(src|href)\s*=\s*["'](https?:)?//""", page), "no external assets"
    assert "<script" not in page
    assert f"{report.by_kg[0].group} (n={report.by_kg[0].n})" in page
    assert "at least" in page and "Clopper-Pearson" in page
    assert "Gold review coverage" in page and "Audit of accepts" in page


def test_error_kinds_and_honeypots_are_called_out(mini_holdout, mini_gold, tmp_path):
    run_id = run_system(mini_holdout, mini_gold, tmp_path / "r.duckdb", "oracle", seeds=1)
    with ResultsDB(tmp_path / "r.duckdb", read_only=True) as db:
        md = render_markdown(build_report(db, run_id))
    assert "### Error kinds (excluded from accuracy)" in md and "- none" in md
    assert "no gold directory given" in md  # what the report could not include, it says
