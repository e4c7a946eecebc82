"""Interval estimates: Wilson's closed form and the Clopper-Pearson bound through scipy's
inverse incomplete beta function, the computations of statsmodels' `proportion_confint`
(methods "wilson" and "beta"), to which tests/reports/test_stats_and_pages.py holds them bit
for bit over every count up to 120 trials and at large counts.

statsmodels is not imported here: importing it costs about 1.4 CPU-seconds (it loads pandas
and scipy.stats), which every `kgeval run` and `kgeval report` paid for two formulas.
"""

from __future__ import annotations

from math import sqrt

CRITICAL_95 = 1.9599639845400545
"""`-scipy.special.ndtri(0.025)`, the two-sided 95% critical value the default interval uses,
as scipy computes it (a test holds them equal): the default interval imports no scipy."""


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default), computed in
    statsmodels' order of operations (its critical value is `norm.isf`, i.e. `-ndtri`), so the
    bounds are bit for bit those of `proportion_confint(method="wilson")`."""
    if n <= 0:
        raise ValueError("an interval needs at least one trial")
    if alpha == 0.05:
        crit = CRITICAL_95
    else:  # imported on first use: ~0.3 CPU-s (statsmodels: 1.4)
        from scipy.special import ndtri

        crit = float(-ndtri(alpha / 2))
    crit2, share = crit**2, successes / n
    denom = 1 + crit2 / n
    centre = (share + crit2 / (2 * n)) / denom
    half = crit * sqrt(share * (1.0 - share) / n + crit2 / (4.0 * n**2)) / denom
    return max(centre - half, 0.0), min(centre + half, 1.0)


def clopper_pearson_lower(successes: int, n: int, alpha: float = 0.05) -> float:
    """"At least X% correct": the lower end of the two-sided (1 - alpha) Clopper-Pearson
    (exact binomial) interval, which is a one-sided (1 - alpha/2) lower confidence bound.

    With the default alpha = 0.05 that is the two-sided 95% interval's lower end = a one-sided
    97.5% bound: 15/15 gives 0.782 (= 0.025 ** (1/15)). A one-sided 95% bound would be
    0.819 (= 0.05 ** (1/15)); we report the more cautious figure, consistent with the
    two-sided Wilson intervals beside it.
    """
    from scipy.special import betaincinv

    if n <= 0:
        raise ValueError("a bound needs at least one trial")
    if successes <= 0:
        return 0.0
    return float(betaincinv(successes, n - successes + 1, alpha / 2))
