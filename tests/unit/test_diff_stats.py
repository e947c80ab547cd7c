"""The t quantile and the mean-difference interval behind the diff's confidence intervals."""

from __future__ import annotations

import pytest

from advisor.diff.stats import mean_difference_interval, t_cdf, t_quantile

# Student t 0.975 quantiles from the standard table
TABLE = {1: 12.706, 2: 4.303, 3: 3.182, 5: 2.571, 10: 2.228, 30: 2.042, 120: 1.980}


@pytest.mark.parametrize(("df", "q"), sorted(TABLE.items()))
def test_t_quantile_matches_table(df: int, q: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(q, abs=1e-3)
    assert t_quantile(0.025, df) == pytest.approx(-q, abs=1e-3)
    assert t_cdf(t_quantile(0.9, df), df) == pytest.approx(0.9, abs=1e-9)


def test_welch_interval_by_hand() -> None:
    # means 10.875 and 12.5; Welch df 4.85 (computed by hand from the sample variances)
    iv = mean_difference_interval([10, 11, 12, 10.5], [12, 13, 12.5])
    assert iv is not None and iv.method == "welch-t"
    assert iv.df == pytest.approx(4.8496, abs=1e-3)
    assert (iv.low + iv.high) / 2 == pytest.approx(1.625)
    assert not iv.low <= 0.0 <= iv.high  # the interval excludes zero


def test_interval_needs_a_noise_estimate() -> None:
    assert mean_difference_interval([10.0], [11.0]) is None
    assert mean_difference_interval([10.0, 10.5], [11.0]) is None
    one_vs_many = mean_difference_interval([10.0, 10.2, 9.8], [12.0])
    assert one_vs_many is not None and one_vs_many.df == 2


def test_identical_samples_give_a_point_interval() -> None:
    iv = mean_difference_interval([5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert iv is not None and iv.low == iv.high == 0.0
