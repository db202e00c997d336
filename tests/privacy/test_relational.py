"""Theorem 3 (relational coupled sampling) bound: sanity limits, soundness ordering, accountant integration."""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.errors import OptionError
from graphrelease.privacy.accountants import analyse, compute_epsilon
from graphrelease.privacy.analysis import rdp as rdp_analysis
from graphrelease.privacy.analysis import relational
from graphrelease.privacy.ledger import LedgerEntry

ORDERS = [2.0, 4.0, 8.0, 16.0, 32.0]


def params(**kw):
    base = dict(noise_multiplier=1.0, sample_rate=1e-3, num_negatives=0, degree_cap=1, num_nodes=10**4,
                num_edges=10**5, clipping="freq")
    return {**base, **kw}


@pytest.mark.parametrize("clipping", ["freq", "standard"])
def test_no_negatives_degree_one_is_the_poisson_subsampled_gaussian(clipping):
    # the reference code's own sanity check: k_neg=0, K=1 reduces to standard Poisson sampling of edges
    ours = relational.rdp_per_step(params(clipping=clipping), ORDERS)
    ref = rdp_analysis.poisson_gaussian_add_remove(1e-3, 1.0, ORDERS)
    assert np.allclose(ours, ref, rtol=1e-3)
    assert np.all(ours >= ref * (1 - 1e-9))


def test_degree_cap_negatives_and_standard_clipping_cost_more():
    freq_k1 = relational.rdp_per_step(params(), ORDERS)
    freq_k5 = relational.rdp_per_step(params(degree_cap=5), ORDERS)
    freq_neg = relational.rdp_per_step(params(degree_cap=5, num_negatives=4), ORDERS)
    std_neg = relational.rdp_per_step(params(degree_cap=5, num_negatives=4, clipping="standard"), ORDERS)
    assert np.all(freq_k5 > freq_k1) and np.all(freq_neg > freq_k5)
    assert np.all(std_neg > freq_neg)
    # freq clipping with K=5 is never below the group bound's effective-rate sampled Gaussian
    q5 = 1 - (1 - 1e-3) ** 5
    assert np.all(freq_k5 >= rdp_analysis.poisson_gaussian_add_remove(q5, 1.0, ORDERS) * (1 - 1e-6))


def test_relational_entry_in_the_accountants():
    e = LedgerEntry(mechanism="relational_coupled", stage="rel", count=200,
                    params=params(degree_cap=3, num_negatives=2, noise_multiplier=1.5))
    res = analyse(e, 1e-5, "pld")
    assert res.method == "rdp-fallback" and np.isfinite(res.epsilon) and res.epsilon > 0
    more = LedgerEntry(mechanism="relational_coupled", stage="rel", count=400,
                       params=params(degree_cap=3, num_negatives=2, noise_multiplier=1.5))
    assert compute_epsilon(more, 1e-5, "rdp") > res.epsilon
    with pytest.raises(OptionError, match="lacks"):
        compute_epsilon(LedgerEntry(mechanism="relational_coupled", stage="r", params={"sample_rate": 0.1}), 1e-5)
    with pytest.raises(OptionError, match="clipping"):
        compute_epsilon(LedgerEntry(mechanism="relational_coupled", stage="r", params=params(clipping="x")), 1e-5)
