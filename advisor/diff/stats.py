"""Small statistics for comparing step times: means, Welch's t interval, Student t quantiles.

Pure Python (no SciPy in the core): the t quantile comes from bisection on the t CDF, which is the
regularized incomplete beta function evaluated by its continued fraction (Numerical Recipes 6.4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean, stdev


@dataclass(frozen=True)
class Interval:
    """A confidence interval for `new_mean - base_mean` (ns), with how it was computed."""

    low: float
    high: float
    level: float
    method: str
    df: float


def _betacf(a: float, b: float, x: float) -> float:
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-14:
            break
    return h


def _betai(a: float, b: float, x: float) -> float:
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(lbeta)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (df may be fractional, as in Welch)."""
    tail = 0.5 * _betai(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t (0 < p < 1)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError("need 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def mean_difference_interval(base: list[float], new: list[float], level: float = 0.95) -> Interval | None:
    """Interval for mean(new) - mean(base).

    Both sides with >= 2 samples: Welch's t (unequal variances, Welch-Satterthwaite df). One side with
    a single sample and the other with >= 3: the other side's variance stands in for both (df = n - 1),
    i.e. "is this one capture outside the spread of the other side". Otherwise None: no noise estimate.
    """
    nb, nn = len(base), len(new)
    diff = fmean(new) - fmean(base) if nb and nn else 0.0
    alpha = (1.0 - level) / 2.0
    if nb >= 2 and nn >= 2:
        vb, vn = stdev(base) ** 2 / nb, stdev(new) ** 2 / nn
        se = math.sqrt(vb + vn)
        if se == 0.0:
            return Interval(diff, diff, level, "welch-t (no spread in either side)", float(nb + nn - 2))
        df = (vb + vn) ** 2 / ((vb**2 / (nb - 1) if nb > 1 else 0.0) + (vn**2 / (nn - 1) if nn > 1 else 0.0))
        half = t_quantile(1.0 - alpha, df) * se
        return Interval(diff - half, diff + half, level, "welch-t", df)
    if min(nb, nn) == 1 and max(nb, nn) >= 3:
        many = base if nb > 1 else new
        s = stdev(many)
        se = s * math.sqrt(1.0 / nb + 1.0 / nn)
        df = float(len(many) - 1)
        half = t_quantile(1.0 - alpha, df) * se
        return Interval(diff - half, diff + half, level, "t, variance of the multi-sample side", df)
    return None
