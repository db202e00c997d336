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
from graphrelease.generators.degree_postprocess import PLATEAU_BAND, interpolate_plateaus, splice_low_degrees
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


def test_the_cumulative_counts_never_rewrite_a_hub_the_sorted_sequence_places_far_above_them():
    """A wheel's 399 rim nodes of degree 3 and its hub: every count F(j), j >= 3, is 399 of 400 nodes, and noise of
    scale 40 (0.05 of epsilon 1) lifts the isotonic fit to 400 at j = 3 (4 of 40 seeded fits), which rebuilt all 400
    positions, the hub's included, as degree 3."""
    n, scale, sd = 400, 2.0 / 0.05, 2.0 * np.sqrt(2.0) / 0.22
    values = np.concatenate([np.full(399, 3.0), [399.0]])
    noisy = np.concatenate([[0.0, 0.0, 0.0], np.full(61, 400.4)])  # the counts as that noise read them
    assert splice_low_degrees(values, noisy, scale).max() == 3.0  # without the bound: no hub left
    kept = splice_low_degrees(values, noisy, scale, sorted_sd=sd)
    assert kept[-1] == 399.0 and np.array_equal(kept[:-1], np.full(399, 3.0))
    # Positions within the bound are rebuilt as before (a value 4 sd above the run's end is the limit).
    near = np.concatenate([np.full(399, 3.0), [4.0 + 3.9 * sd]])
    assert splice_low_degrees(near, noisy, scale, sorted_sd=sd).max() == 3.0


def test_dp_bter_releases_the_wheels_hub_in_the_fits_that_lost_it():
    """Seeded fits 100-139 at epsilon 1: before the bound, 4 of them (106, 115, 126, 129) released 400 degrees of 3.
    (Two others, 119 and 123, release the hub at 317 / 311 with or without it: the wedge debias, not the splice.)"""
    graph = from_networkx(nx.wheel_graph(400))
    for seed in (106, 115, 126, 129, 100, 101):
        fitted = GENERATORS.get("dp_bter")(seed=seed).fit(graph, Budget(epsilon=1.0, delta=1e-6, adjacency="edge"))
        assert fitted.arrays["degrees"].max() >= 0.8 * 399, seed


def test_a_hubs_modelled_triangles_stay_below_the_edges_among_its_neighbours():
    degrees = np.concatenate([np.full(4999, 2.0), [4800.0]])  # m = 7,399.5; the hub's neighbours hold m - d
    bias = _modelled_bias(degrees, np.array([3.0]), kappa=0.01)[0]
    assert bias <= 0.5 * degrees.sum() - 4800.0
    # Without the hub the model is kappa * C(d, 2) as before.
    small = np.full(100, 10.0)
    assert _modelled_bias(small, np.array([3.0]), kappa=0.1)[0] == pytest.approx(0.1 * 45 * 0.7 * 100)


@pytest.mark.parametrize("name,build", [("star", lambda: nx.star_graph(499)), ("wheel", lambda: nx.wheel_graph(400))])
def test_dp_bter_keeps_one_hub_where_the_input_has_one(name, build):
    """Seeded (10 fits x 2 epsilons). Before the band the released top degrees of the star were 499 / 468 / 415 and
    the sample's hub 80-182 (several medium hubs shared its edges); with it 430-492 and 3-14. Measured on this code:
    the sample's hub over the input's has median 0.88 / 0.97 (star, epsilon 1 / 4) and 0.94 / 0.99 (wheel); one fit
    in ten falls below 0.8 at epsilon 1 on each (the kept draw is one whose hub repair fell short: the wheel's fit 101,
    0.65, since the component joins pay with cycle edges; 1 of 20 such fits below 0.8 before, 2 of 20 now, log item
    34)."""
    graph = from_networkx(build())
    hub = int(graph.degrees().max())
    # The second value: fit 101 at epsilon 1 once released the wheel's second degree at 57.7 (the line from a
    # three-entry plateau at 13 to the hub, inside its band, then dithered); the largest second over these fits was
    # 0.248 of the hub, and is 0.271 since a triangle count at noise level is no longer corrected for the cap (fit 106:
    # 270 released -> 18, dp_stats.CORRECTION_NOISE; the sample's hub 0.967 -> 0.982).
    second = 0.05 if name == "star" else 0.3
    for epsilon in (1.0, 4.0):
        tops = []
        for seed in range(10):
            fitted = GENERATORS.get("dp_bter")(seed=100 + seed).fit(
                graph, Budget(epsilon=epsilon, delta=1e-6, adjacency="edge"))
            tops.append(np.sort(fitted.sample(1, rng=np.random.default_rng(5 + seed))[0].degrees())[::-1][:2] / hub)
        first, runner_up = np.array(tops).T
        assert (first < 0.8).sum() <= 1 and np.median(first) >= 0.85, (name, epsilon, first.round(2))
        assert runner_up.max() <= second, (name, epsilon, runner_up.round(3))
