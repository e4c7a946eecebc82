"""Interval estimates, from statsmodels (imported on first use: it costs ~2 s at start-up)."""

from __future__ import annotations


def wilson_interval(successes: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default)."""
    from statsmodels.stats.proportion import proportion_confint

    if n <= 0:
        raise ValueError("an interval needs at least one trial")
    low, high = proportion_confint(successes, n, alpha=alpha, method="wilson")
    return float(low), float(high)
