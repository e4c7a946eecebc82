"""Interval estimates, from statsmodels (imported on first use: it costs ~2 s at start-up)."""

from __future__ import annotations


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        raise ValueError("an interval needs at least one trial")
    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(low), float(high)


def clopper_pearson_lower(successes: int, n: int, alpha: float = 0.05) -> float:
    """"At least X% correct": the lower end of the two-sided (1 - alpha) Clopper-Pearson
    (exact binomial) interval, which is a one-sided (1 - alpha/2) lower confidence bound.

    With the default alpha = 0.05 that is the two-sided 95% interval's lower end = a one-sided
    97.5% bound: 15/15 gives 0.782 (= 0.025 ** (1/15)). A one-sided 95% bound would be
    0.819 (= 0.05 ** (1/15)); we report the more cautious figure, consistent with the
    two-sided Wilson intervals beside it.
    """
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        raise ValueError("a bound needs at least one trial")
    low, _ = proportion_confint(successes, n, alpha=alpha, method="beta")
    return float(low)
