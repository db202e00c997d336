"""Lone hubs above a long plateau of low degrees (stars, wheels, hub-and-spoke graphs): the released degree sequence
must not ramp up to the hub, and the triangle cap rule must not model the hub with more triangles than the graph
can hold."""

from __future__ import annotations

import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from graphrelease.generators import GENERATORS
from graphrelease.generators.degree_postprocess import PLATEAU_BAND, interpolate_plateaus
from graphrelease.generators.dp_stats import _modelled_bias
from graphrelease.privacy.budget import Budget

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from proxies import from_networkx  # noqa: E402


def test_the_line_to_a_lone_hub_stays_inside_the_plateaus_band():
    fit = np.concatenate([np.full(499, 1.0), [499.0]])  # a star's isotonic fit: one plateau, one hub
    sd = 2.0 * np.sqrt(2.0) / 0.22  # the sorted entries' noise at 0.22 of epsilon 1
    assert interpolate_plateaus(fit)[-2] > 400  # the unbounded line: a ramp of fake hubs
    banded = interpolate_plateaus(fit, sd)
    assert banded[-1] == 499.0 and banded[:-1].max() <= 1.0 + PLATEAU_BAND * sd / np.sqrt(499) + 1e-9
    # Between plateaus a few noise levels apart (a heavy tail's bulk) the band does not bind.
    steps = np.repeat([3.0, 4.0, 5.0, 7.0], [300, 200, 100, 50])
    assert np.array_equal(interpolate_plateaus(steps, sd), interpolate_plateaus(steps))


def test_a_hubs_modelled_triangles_stay_below_the_edges_among_its_neighbours():
    degrees = np.concatenate([np.full(4999, 2.0), [4800.0]])  # m = 7,399.5; the hub's neighbours hold m - d
    bias = _modelled_bias(degrees, np.array([3.0]), kappa=0.01)[0]
    assert bias <= 0.5 * degrees.sum() - 4800.0
    # Without the hub the model is kappa * C(d, 2) as before.
    small = np.full(100, 10.0)
    assert _modelled_bias(small, np.array([3.0]), kappa=0.1)[0] == pytest.approx(0.1 * 45 * 0.7 * 100)


@pytest.mark.parametrize("name,build", [("star", lambda: nx.star_graph(499)), ("wheel", lambda: nx.wheel_graph(400))])
def test_dp_bter_keeps_one_hub_where_the_input_has_one(name, build):
    """Seeded (2 fits x 2 epsilons). Before the band the released top degrees of the star were 499 / 468 / 415 and
    the sample's hub 80-182 (several medium hubs shared its edges); with it 430-492 and 3-14."""
    graph = from_networkx(build())
    hub = int(graph.degrees().max())
    for epsilon in (1.0, 4.0):
        for seed in range(2):
            fitted = GENERATORS.get("dp_bter")(seed=100 + seed).fit(
                graph, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
            top = np.sort(fitted.sample(1, rng=np.random.default_rng(5 + seed))[0].degrees())[::-1]
            assert top[0] >= 0.8 * hub and top[1] <= 0.15 * hub, (name, epsilon, seed, top[:3])
