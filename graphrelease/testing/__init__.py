"""Test utilities that other issues reuse: the sensitivity-probe harness (:mod:`graphrelease.testing.probes`)."""

from graphrelease.testing.probes import (
    Neighbour,
    ProbeResult,
    assert_within,
    collection_edge_neighbours,
    coupled_poisson_mask,
    edge_neighbours,
    flatten_output,
    graph_neighbours,
    k_neighbour_neighbours,
    keyed_uniform,
    node_neighbours,
    output_distance,
    probe_sensitivity,
)

__all__ = [
    "Neighbour",
    "ProbeResult",
    "assert_within",
    "collection_edge_neighbours",
    "coupled_poisson_mask",
    "edge_neighbours",
    "flatten_output",
    "graph_neighbours",
    "k_neighbour_neighbours",
    "keyed_uniform",
    "node_neighbours",
    "output_distance",
    "probe_sensitivity",
]
