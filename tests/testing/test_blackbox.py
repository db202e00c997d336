"""The black-box two-world audit through the file readers and ``synthesize`` (issue: the node set of an edge list).

Two edge-list files differ in one edge whose endpoint has no other edge. Before the fix the reader took the node
set from the edges, every generator called it public, and the released node count alone gave an epsilon lower
bound of 4.4 at a certified 1.0. The fast tests here release each world 50-60 times: that many runs bound a
deterministic leak above 1.8 (Clopper-Pearson with Bonferroni over 128 tests and 5 statistics), so they fail on the
old code; the positive control (the owner explicitly accepting the node set read off the edges) shows that power.
"""

from __future__ import annotations

import numpy as np
import pytest

from graphrelease.errors import NodeSetError
from graphrelease.io import read_graph
from graphrelease.testing.blackbox import isolated_endpoint_canary, two_world_audit, write_edge_list


@pytest.fixture(scope="module")
def lastfm_ball(data_dir):
    """A 3-hop ball of LastFM Asia around node 0 (134 nodes, 668 edges), renumbered 0..n-1."""
    graph = read_graph(data_dir / "raw" / "lastfm_asia_edges.csv", nodes=7624).data
    ball = np.array(sorted(graph.to_igraph().neighborhood(0, order=3)))
    sub = graph.induced_subgraph(ball)
    return isolated_endpoint_canary(sub.edges, sub.num_nodes)


@pytest.mark.parametrize("method,runs", [("dp_bter", 50), ("dp_dcsbm", 50), ("chung_lu", 60)])
def test_undeclared_node_set_cannot_leak_an_isolated_canary(lastfm_ball, tmp_path, method, runs):
    edges, canary, declared = lastfm_ball
    result = two_world_audit(method, edges, canary, workdir=tmp_path, runs_per_world=runs, declared_nodes=declared)
    assert result.refused_without_declaration  # the default refuses an edge list's inferred node set
    assert result.bound.epsilon < result.certified_epsilon, (result.statistic, result.bound)


def test_positive_control_the_disclosed_node_set_is_seen(lastfm_ball, tmp_path):
    """With ``node_set="from-edges"`` the owner accepts the disclosure: the audit sees the canary in the node count,
    which is what the default path would have shown before the fix (and what its certificate now says)."""
    edges, canary, declared = lastfm_ball
    result = two_world_audit("chung_lu", edges, canary, workdir=tmp_path, runs_per_world=60,
                             declared_nodes=declared, node_set="from-edges")
    assert not result.refused_without_declaration
    assert result.statistic == "num_nodes"
    assert result.bound.epsilon > 1.5


def test_refusal_names_the_fix(lastfm_ball, tmp_path):
    from graphrelease.synth import synthesize

    edges, _, _ = lastfm_ball
    path = tmp_path / "g.csv"
    write_edge_list(path, edges)
    with pytest.raises(NodeSetError, match=r"--nodes N .* --node-set from-edges"):
        synthesize(path, epsilon=1.0, out=tmp_path / "rel")
    assert not (tmp_path / "rel").exists() and not (tmp_path / "rel.key").exists()


@pytest.mark.slow
@pytest.mark.parametrize("method", ["dp_bter", "dp_dcsbm", "chung_lu", "privgraph", "tmf", "dpdk",
                                    "randomized_response", "dpgvae"])
def test_every_single_graph_generator_through_the_cli(lastfm_ball, tmp_path, method):
    """The larger variant: every single-graph generator, through ``graphrelease synth`` in a subprocess."""
    edges, canary, declared = lastfm_ball
    result = two_world_audit(method, edges, canary, workdir=tmp_path, runs_per_world=60, declared_nodes=declared,
                             through="cli")
    assert result.refused_without_declaration
    assert result.bound.epsilon < result.certified_epsilon, (result.statistic, result.bound)
