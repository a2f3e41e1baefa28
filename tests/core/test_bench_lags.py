"""bench_auto_hyper.py's lagged configs (``--lags``) and its count of the cells below the fixed defaults."""

import pytest

from benchmarks.bench_auto_hyper import CONFIGS, below_fixed, lag_configs
from core.solvers.auto_hyper import DEFAULT_LAG


def test_each_lag_is_a_config_named_by_it_and_auto_lag_stays_the_default():
    configs = lag_configs("2, 5,10")
    assert configs == {
        "auto-lag2": {"auto": ["C", "gamma"], "auto_lag": 2},
        "auto-lag5": {"auto": ["C", "gamma"], "auto_lag": 5},
        "auto-lag10": {"auto": ["C", "gamma"], "auto_lag": 10},
    }
    assert lag_configs("") == {}
    default = lag_configs(str(DEFAULT_LAG))
    assert default == {f"auto-lag{DEFAULT_LAG}": CONFIGS["auto-lag"]}  # (auto-lag: the app's lag)


@pytest.mark.parametrize("lags", ["0", "2,-1", "x"])
def test_a_lag_of_0_or_one_that_is_not_a_lag_is_refused(lags):
    with pytest.raises(ValueError):
        lag_configs(lags)


def test_cells_below_count_negatives_at_four_decimals_and_those_beyond_the_tie():
    # -0.00004 prints as -0.0000 (not below); -0.0004 is below but within the tie; -0.0012 beyond it
    assert below_fixed([-0.00004, -0.0004, -0.0012, 0.001, 0.0]) == (2, 1)
    assert below_fixed([]) == (0, 0)
