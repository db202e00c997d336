"""GraphRNN-style MMD: known cases, symmetry, identity, and the 1-D EMD against scipy."""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
import pytest
from scipy.stats import wasserstein_distance

from graphrelease.audit import mmd
from graphrelease.errors import OptionError
from graphrelease.graph import Graph


def _g(nxg: nx.Graph) -> Graph:
    return Graph.from_edges(nxg.number_of_nodes(), np.array(list(nxg.edges()), dtype=np.int64).reshape(-1, 2))[0]


def _set(kind: str, seeds) -> list[Graph]:
    if kind == "er":
        return [_g(nx.gnp_random_graph(40, 0.1, seed=s)) for s in seeds]
    return [_g(nx.barabasi_albert_graph(40, 2, seed=s)) for s in seeds]


def test_emd_matches_scipy_wasserstein() -> None:
    rng = np.random.default_rng(0)
    for _ in range(5):
        x, y = rng.random(7), rng.random(9)
        x, y = x / x.sum(), y / y.sum()
        ref = wasserstein_distance(np.arange(7), np.arange(9), u_weights=x, v_weights=y)
        assert mmd.emd_1d(x, y) == pytest.approx(ref)
        assert mmd.emd_1d(x, y, distance_scaling=10) == pytest.approx(ref / 10)


def test_identical_sets_give_zero_and_symmetry() -> None:
    a = _set("er", range(4))
    b = _set("ba", range(4))
    for fn in (mmd.degree_mmd, mmd.clustering_mmd, mmd.orbit_mmd):
        assert fn(a, a) == 0.0
        assert fn(a, b) == pytest.approx(fn(b, a))
        assert fn(a, b) > 0
    assert mmd.degree_mmd(a, b, kernel="tv") > 0


def test_different_families_are_farther_than_resamples() -> None:
    er1, er2 = _set("er", range(6)), _set("er", range(100, 106))
    ba = _set("ba", range(6))
    for fn in (mmd.degree_mmd, mmd.clustering_mmd, mmd.orbit_mmd):
        assert fn(er1, ba) > fn(er1, er2), fn.__name__


def test_known_value_single_graphs() -> None:
    """One graph per set: MMD^2 = 2 - 2 k(x, y). Path P3 vs triangle: degree histograms (2/3 at 1, 1/3 at 2) vs
    (1 at 2), EMD = 2/3, so MMD^2 = 2 - 2 exp(-(2/3)^2 / 2)."""
    path = _g(nx.path_graph(3))
    tri = _g(nx.complete_graph(3))
    assert mmd.degree_mmd([path], [tri]) == pytest.approx(2 - 2 * math.exp(-(2 / 3) ** 2 / 2))
    # clustering: all-zero vs all-one coefficients -> EMD = 99/100 bins apart -> 0.99
    assert mmd.clustering_mmd([path], [tri]) == pytest.approx(2 - 2 * math.exp(-(0.99**2) / (2 * 0.01)))


def test_errors() -> None:
    a = _set("er", range(2))
    with pytest.raises(OptionError):
        mmd.degree_mmd(a, [])
    with pytest.raises(OptionError):
        mmd.degree_mmd(a, a, kernel="rbf")
