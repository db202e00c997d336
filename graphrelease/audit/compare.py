"""Original-vs-release comparisons: PGB relative errors, degree-distribution distances, community and centrality
agreement, the seed paper's Table 1 differences, and aggregation over sets of graphs.

Every number here compares the private input with a release, so it belongs in the internal audit report only.
Keys are stable and defined in :data:`COMPARISON_LEGEND`.

* **PGB** queries (PGB, the benchmark of differentially private synthetic graph generation, Liu et al., 2024) are
  compared by relative error :math:`|f(G') - f(G)| / |f(G)|` (``inf`` when ``f(G) = 0 != f(G')``, ``0`` when
  both are 0).
* Degree distributions: KL divergence :math:`\\mathrm{KL}(P \\| Q)` between the degree histograms of the original
  (P) and the release (Q) on the common support ``0..max degree``, where every bin gets ``DEGREE_KL_EPSILON`` added
  before renormalising (otherwise one empty release bin makes KL infinite). That smoothing makes KL dominated by
  support mismatch, so the Wasserstein-1 distance between the two degree samples and the two-sample
  Kolmogorov-Smirnov statistic are always reported beside it.
* Community agreement: Louvain partitions of both graphs (same node ids ``0..n-1``), sklearn's normalised mutual
  information (arithmetic mean normalisation) and its chance-adjusted form (AMI, Vinh, Epps & Bailey 2010). NMI
  rewards fragmentation: a release whose Louvain partition has many small parts scores high against any partition
  (the empty graph, all singletons, scores 0.37 on Slashdot and 0.46 on Facebook), so the AMI, about 0 for any
  partition independent of the original's, is reported beside it.
* Eigenvector centrality (scaled to max 1): overlap of the top-1% nodes (``|top(G) & top(G')| / k``,
  ``k = max(1, ceil(n/100))``) and the mean absolute error over nodes.
* Seed Table 1 ("Secure Deep Graph Generation with Link Differential Privacy", Yang et al., IJCAI 2021): LCC, TC,
  CPL, GINI, REDE, computed as the seed's code does on the graph **with isolated nodes removed**, compared by
  absolute difference; over sets of graphs, the mean absolute difference over the pairs (i-th original, i-th
  release). Our GINI uses ranks 1..n (the seed's code uses 0..n-1, which subtracts 2/n) and our REDE uses
  0 ln 0 = 0 (the seed adds 1e-4 inside the log).

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g = Graph.from_edges(4, np.array([[0, 1], [1, 2], [2, 3], [0, 2]]))[0]
>>> compare_graphs(g, g)["rel_err_triangle_count"]
0.0
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from graphrelease.audit import statistics as st
from graphrelease.errors import OptionError
from graphrelease.graph import Graph

DEGREE_KL_EPSILON = 1e-6

#: statistic key in graph_statistics -> PGB query name
PGB_QUERIES: dict[str, str] = {
    "num_edges": "number of edges",
    "triangle_count": "number of triangles",
    "avg_degree": "average degree",
    "degree_variance": "degree variance",
    "diameter": "diameter",
    "cpl": "average shortest-path length",
    "global_clustering": "global clustering coefficient",
    "avg_clustering": "average local clustering coefficient",
    "modularity": "modularity of the Louvain partition",
    "assortativity": "degree assortativity",
}
TABLE1_KEYS: tuple[str, ...] = ("lcc_size", "triangle_count", "cpl", "gini", "rede")

COMPARISON_LEGEND: dict[str, str] = {
    **{f"rel_err_{k}": f"PGB relative error |f(G') - f(G)| / |f(G)| of the {v}" for k, v in PGB_QUERIES.items()},
    "degree_kl": (
        f"KL(P_orig || P_release) of degree histograms on 0..max degree, each bin + {DEGREE_KL_EPSILON:g} then "
        "renormalised (dominated by support mismatch: read with degree_wasserstein)"
    ),
    "degree_wasserstein": "Wasserstein-1 (earth mover's) distance between the two degree samples, in degree units",
    "degree_ks": "two-sample Kolmogorov-Smirnov statistic between the degree samples (max CDF gap)",
    "community_nmi": "NMI between the Louvain partitions of original and release (same node ids); NaN if n differs",
    "community_ami": (
        "the same partitions' adjusted mutual information: about 0 when the release's partition is independent of "
        "the original's, however many parts it has (NMI is not: read the two together); NaN if n differs"
    ),
    "eigenvector_top1pct_overlap": "share of the original's top-1% eigenvector-centrality nodes also top-1% in release",
    "eigenvector_mae": "mean |c_orig - c_release| of eigenvector centralities scaled to max 1",
    **{f"table1_abs_diff_{k}": f"seed Table 1: |{k}(G) - {k}(G')|, isolated nodes removed first" for k in
       TABLE1_KEYS},
}


def relative_error(original: float, released: float) -> float:
    """``|released - original| / |original|``; 0 if both are 0, ``inf`` if only the original is 0, NaN if either
    is NaN."""
    if math.isnan(original) or math.isnan(released):
        return float("nan")
    if original == 0:
        return 0.0 if released == 0 else float("inf")
    return abs(released - original) / abs(original)


def degree_histogram_kl(original_degrees: np.ndarray, released_degrees: np.ndarray) -> float:
    """KL(P_orig || P_release) of the integer histograms of two degree samples, each bin + ``DEGREE_KL_EPSILON`` then
    renormalised (the module docstring's ``degree_kl``; dp_bter's dither bootstrap scores with it too)."""
    d0 = np.asarray(original_degrees, dtype=np.int64)
    d1 = np.asarray(released_degrees, dtype=np.int64)
    size = int(max(d0.max(initial=0), d1.max(initial=0))) + 1
    p = np.bincount(d0, minlength=size) / max(d0.size, 1) + DEGREE_KL_EPSILON
    q = np.bincount(d1, minlength=size) / max(d1.size, 1) + DEGREE_KL_EPSILON
    p, q = p / p.sum(), q / q.sum()
    return float(np.sum(p * np.log(p / q)))


def degree_distribution_distances(original: Graph, released: Graph) -> dict[str, float]:
    """``degree_kl`` (epsilon-smoothed), ``degree_wasserstein`` and ``degree_ks``; see the module docstring."""
    from scipy.stats import ks_2samp, wasserstein_distance

    d0, d1 = original.degrees(), released.degrees()
    return {
        "degree_kl": degree_histogram_kl(d0, d1),
        "degree_wasserstein": float(wasserstein_distance(d0, d1)),
        "degree_ks": float(ks_2samp(d0, d1).statistic),
    }


def community_agreement(original: Graph, released: Graph, *, seed: int = 0) -> dict[str, float]:
    """``community_nmi`` and ``community_ami`` of the seeded Louvain partitions of the two graphs (NaN if their node
    counts differ)."""
    if original.num_nodes != released.num_nodes:
        return {"community_nmi": float("nan"), "community_ami": float("nan")}
    return partition_agreement(st.louvain_partition(original, seed=seed), st.louvain_partition(released, seed=seed))


def partition_agreement(original: np.ndarray, released: np.ndarray) -> dict[str, float]:
    """NMI (arithmetic normalisation) and AMI between two partitions of the same nodes."""
    from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

    return {"community_nmi": float(normalized_mutual_info_score(original, released)),
            "community_ami": float(adjusted_mutual_info_score(original, released))}


def community_nmi(original: Graph, released: Graph, *, seed: int = 0) -> float:
    """NMI between the seeded Louvain partitions of the two graphs (NaN if their node counts differ)."""
    return community_agreement(original, released, seed=seed)["community_nmi"]


def centrality_agreement(original: Graph, released: Graph) -> dict[str, float]:
    """Top-1% overlap and MAE of eigenvector centralities (NaN if node counts differ)."""
    if original.num_nodes != released.num_nodes:
        return {"eigenvector_top1pct_overlap": float("nan"), "eigenvector_mae": float("nan")}
    c0, c1 = st.eigenvector_centrality(original), st.eigenvector_centrality(released)
    k = max(1, math.ceil(original.num_nodes / 100))
    # stable sort with ids as tie-breaker, so that ties (e.g. all-zero components) are handled deterministically
    top0 = set(np.lexsort((np.arange(c0.size), -c0))[:k].tolist())
    top1 = set(np.lexsort((np.arange(c1.size), -c1))[:k].tolist())
    return {"eigenvector_top1pct_overlap": len(top0 & top1) / k, "eigenvector_mae": float(np.abs(c0 - c1).mean())}


def without_isolated_nodes(graph: Graph) -> Graph:
    """The subgraph induced by the nodes of degree >= 1 (renumbered); the graph itself if it has none isolated.

    An edgeless graph keeps one node so that it stays a valid :class:`Graph`.
    """
    keep = np.flatnonzero(graph.degrees() > 0)
    if keep.size == graph.num_nodes:
        return graph
    if keep.size == 0:
        return Graph(1, np.zeros((0, 2), dtype=np.int64), name=graph.name)
    return graph.induced_subgraph(keep).without_private_metadata()


def table1_statistics(graph: Graph, *, stats: dict[str, float] | None = None) -> dict[str, float]:
    """The seed's Table 1 statistics (LCC, TC, CPL, GINI, REDE) on the graph without isolated nodes.

    ``stats``: :func:`graph_statistics` of ``graph``, reused when the graph has no isolated node (then the
    statistics coincide; isolated nodes change none of LCC, TC, CPL except an edgeless graph's LCC).
    """
    g = without_isolated_nodes(graph)
    d = g.degrees()
    if stats is not None and g is graph:
        return {"lcc_size": stats["lcc_size"], "triangle_count": stats["triangle_count"], "cpl": stats["cpl"],
                "gini": st.gini(d), "rede": st.rede(d)}
    sizes = np.asarray(g.to_igraph().connected_components().sizes())
    return {
        "lcc_size": float(sizes.max()),
        "triangle_count": float(st.triangle_count(g)),
        "cpl": st.path_statistics(g)["cpl"],
        "gini": st.gini(d),
        "rede": st.rede(d),
    }


def compare_graphs(original: Graph, released: Graph, *, seed: int = 0,
                   original_stats: dict[str, float] | None = None,
                   released_stats: dict[str, float] | None = None) -> dict[str, float]:
    """All comparisons of :data:`COMPARISON_LEGEND` between an original graph and one released graph.

    ``original_stats`` / ``released_stats``: outputs of :func:`graph_statistics` (same ``seed``) if already computed.
    """
    s0 = original_stats if original_stats is not None else st.graph_statistics(original, seed=seed, spectrum=False)
    s1 = released_stats if released_stats is not None else st.graph_statistics(released, seed=seed, spectrum=False)
    out: dict[str, float] = {}
    for key in PGB_QUERIES:
        out[f"rel_err_{key}"] = relative_error(s0[key], s1[key])
    out.update(degree_distribution_distances(original, released))
    out.update(community_agreement(original, released, seed=seed))
    out.update(centrality_agreement(original, released))
    t0, t1 = table1_statistics(original, stats=s0), table1_statistics(released, stats=s1)
    for key in TABLE1_KEYS:
        out[f"table1_abs_diff_{key}"] = abs(t0[key] - t1[key])
    return out


def compare_graph_sets(originals: Sequence[Graph], releases: Sequence[Graph], *, kernel: str = "emd",
                       motif_time_limit: float = 10.0) -> dict[str, float]:
    """Collection-level comparison: the seed's Table 1 mean absolute differences over pairs (i-th original vs i-th
    release), the GraphRNN MMDs (all pairs of the two sets), and the seed's mean degree-vector and motif-vector
    cosine similarities over pairs.

    Keys: ``table1_mad_<stat>``, ``degree_mmd``, ``clustering_mmd``, ``orbit_mmd``, ``degree_cosine``,
    ``motif_cosine``.
    """
    from graphrelease.audit import mmd, motifs

    if len(originals) != len(releases) or not originals:
        raise OptionError(
            f"compare_graph_sets pairs the i-th original with the i-th release: got {len(originals)} originals and "
            f"{len(releases)} releases (sample as many graphs as there are originals)"
        )
    out: dict[str, float] = {}
    t0 = [table1_statistics(g) for g in originals]
    t1 = [table1_statistics(g) for g in releases]
    for key in TABLE1_KEYS:
        diffs = [abs(a[key] - b[key]) for a, b in zip(t0, t1)]
        out[f"table1_mad_{key}"] = float(np.nanmean(diffs)) if not all(map(math.isnan, diffs)) else float("nan")
    out.update(mmd.all_mmds(list(originals), list(releases), kernel=kernel))
    out["degree_cosine"] = motifs.mean_pairwise_cosine([motifs.degree_vector(g) for g in originals],
                                                       [motifs.degree_vector(g) for g in releases])
    out["motif_cosine"] = motifs.mean_pairwise_cosine(
        [motifs.motif_vector(g, time_limit=motif_time_limit) for g in originals],
        [motifs.motif_vector(g, time_limit=motif_time_limit) for g in releases],
    )
    return out


SET_COMPARISON_LEGEND: dict[str, str] = {
    **{f"table1_mad_{k}": f"seed Table 1: mean over pairs of |{k}(G_i) - {k}(G'_i)|, isolated nodes removed"
       for k in TABLE1_KEYS},
    "degree_mmd": "squared MMD of degree histograms, Gaussian EMD kernel sigma=1 (GraphRNN)",
    "clustering_mmd": "squared MMD of 100-bin local-clustering histograms, Gaussian EMD kernel sigma=0.1 (GraphRNN)",
    "orbit_mmd": "squared MMD of mean 4-node orbit counts per node, Gaussian kernel sigma=30 (GraphRNN)",
    "degree_cosine": "seed: mean over pairs of the cosine similarity of 50-bin degree vectors",
    "motif_cosine": "seed: mean over pairs of the cosine similarity of 29-dim graphlet-count vectors",
}
