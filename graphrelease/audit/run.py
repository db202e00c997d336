"""The audit orchestrator: original vs one or more releases -> one :class:`AuditResult` (numbers only).

``run_audit(original, releases, ...)`` computes, per release: graph statistics and the seed's Table 1 differences
(LCC, TC, CPL, GINI, REDE), degree distributions, motif vectors and cosine similarity, MMDs, downstream utility,
attacks (link inference / edge membership on the released structure) and, when supplied, empirical privacy audits.
Rendering lives in :mod:`graphrelease.report`. Everything here is a NON-PRIVATE view of the input: the result is an
internal document, never part of a release.

A *release* is a release directory (``certificate.json``, ``manifest.json``, ``graphs/*``) or a plain graph file or
an in-memory :class:`~graphrelease.graph.Graph`. Synthetic graphs of a collection release inherit graph labels only
when the release has ``graphs/graph_labels.csv`` (``graph,label`` rows, one per synthetic graph file in sorted
order).

Example
-------
>>> import numpy as np
>>> from graphrelease.graph import Graph
>>> g, _ = Graph.from_edges(5, np.array([[0, 1], [1, 2], [2, 0], [2, 3], [3, 4]]))
>>> res = run_audit(g, [g], tasks=("statistics",), attacks=())
>>> res.table1[0]["lcc"]
0.0
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from graphrelease.audit.inputs import (  # noqa: F401  (re-exported: callers import the loaders from here)
    GRAPH_SUFFIXES, ReleaseInput, check_releases_match, load_original, load_release,
)
from graphrelease.audit.verdict import COUNTS, relative_error
from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

#: The seed's Table 1 columns: (result key, statistics key, header).
TABLE1_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("lcc", "lcc_size", "LCC"),
    ("tc", "triangle_count", "TC"),
    ("cpl", "cpl", "CPL"),
    ("gini", "gini", "GINI"),
    ("rede", "rede", "REDE"),
)
TASKS = ("statistics", "motifs", "mmd", "downstream")
ATTACKS = ("link_inference", "membership")
#: Collections: statistics are averaged over at most this many graphs per side (uniform sample, seeded).
COLLECTION_STAT_GRAPHS = 200

ProgressFn = Callable[[str, int, int], None]

LEGEND: dict[str, str] = {
    "table1": (
        "Table 1 (seed layout): for each release, |statistic(release) - statistic(original)|, averaged over the "
        "release's graphs (collections: difference of the means over graphs). LCC = largest connected component "
        "size, TC = triangle count, CPL = characteristic path length, GINI = Gini coefficient of degrees, REDE = "
        "relative edge distribution entropy; full definitions in the statistics legend. eps = certified epsilon "
        "(blank: no guarantee)."
    ),
    "relative_error": (
        "mean relative error: average over the Table 1 columns of |s_release - s_original| / max(|s_original|, "
        "1e-12), with a denominator of at least 1 for the counts (LCC, TC); lower is better; the y axis of the "
        "privacy-utility curve"
    ),
    "motif_cosine": (
        "cosine similarity of the motif-count vectors (connected 3- and 4-node graphlets, or the seed's 29-dim "
        "vector up to 5 nodes when requested) of release and original; 1 = identical proportions"
    ),
    "degree_cosine": "cosine similarity of the seed's 50-bin degree-distribution vectors",
    "mmd": (
        "squared MMD (GraphRNN, biased V-statistic) between the original and released graph sets: degree and "
        "clustering histograms with a Gaussian-EMD kernel (sigma 1 and 0.1), mean orbit counts of the 2-4-node "
        "graphlets with a Gaussian kernel (sigma 30); 0 = identical sets, lower is closer"
    ),
    "epsilon": (
        "epsilon, delta: the privacy parameters stated by the release's certificate (its accountant composed over "
        "its ledger); a stated epsilon with guarantee none is not a DP guarantee"
    ),
    "guarantee": "proved = every ledger mechanism has a proof and passed its probes; none = no DP guarantee",
}


# ---------------------------------------------------------------------------------------------------- result
@dataclass
class AuditResult:
    """Every number of an audit, JSON-able through :meth:`to_dict`; the report renders exactly these."""

    original: dict[str, Any]
    releases: list[dict[str, Any]]
    statistics: dict[str, dict[str, float]] = field(default_factory=dict)
    table1: list[dict[str, Any]] = field(default_factory=list)
    degree_histograms: dict[str, list[float]] = field(default_factory=dict)
    motifs: dict[str, Any] = field(default_factory=dict)
    mmd: dict[str, Any] = field(default_factory=dict)
    downstream: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    attacks: dict[str, dict[str, Any]] = field(default_factory=dict)
    empirical: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    legend: dict[str, str] = field(default_factory=dict)
    #: Plain-words summary per release (see :mod:`graphrelease.audit.verdict`); rendered first in every report.
    verdict: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return _jsonable(asdict(self))


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, np.ndarray):
        return _jsonable(x.tolist())
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        v = float(x)
        return v if math.isfinite(v) else None
    return x


# ---------------------------------------------------------------------------------------------------- pieces
def _stats_over(graphs: Sequence[Graph], *, seed: int, spectrum: bool) -> dict[str, float]:
    from graphrelease.audit.statistics import graph_statistics

    rows = [graph_statistics(g, seed=seed, spectrum=spectrum) for g in graphs]
    keys = rows[0].keys()
    return {k: _nanmean([r.get(k, np.nan) for r in rows]) for k in keys}


#: The input's own communities on a release (single-graph audits, same node ids). A degree-corrected random graph
#: scores about 0 on the first (any graph's modularity is relative to its own degrees), so a release that keeps edges,
#: degrees and triangles but not the communities reads as lost here; nothing else in the audit would say so.
COMMUNITY_LEGEND: dict[str, str] = {
    "input_communities_modularity": (
        "Newman modularity of the ORIGINAL's Louvain partition (seeded) scored on this graph: the original's own "
        "value on the original; about 0 on a random graph with the same degrees"
    ),
    "input_communities_nmi": (
        "NMI (arithmetic normalisation) between the original's Louvain partition and this graph's (1 on the "
        "original); it rewards fragmentation (an edgeless graph's singletons score 0.37-0.59 on Slashdot, "
        "Chameleon, Facebook, LastFM and Cora): read it with the AMI"
    ),
    "input_communities_ami": (
        "adjusted mutual information of the same two partitions (1 on the original, about 0 for a partition "
        "independent of the original's, however many parts it has)"
    ),
}


def _input_communities(original: Graph, original_stats: dict[str, float], *, seed: int) -> np.ndarray:
    """The original's seeded Louvain partition; its statistics gain the :data:`COMMUNITY_LEGEND` values."""
    from graphrelease.audit.statistics import louvain_partition, modularity

    members = louvain_partition(original, seed=seed)
    original_stats["input_communities_modularity"] = modularity(original, members)
    original_stats["input_communities_nmi"] = 1.0
    original_stats["input_communities_ami"] = 1.0
    return members


def _communities_on(graph: Graph, members: np.ndarray, *, seed: int) -> dict[str, float]:
    """:data:`COMMUNITY_LEGEND` values of one release graph (NaN when its node count differs from the original's)."""
    from graphrelease.audit.compare import partition_agreement
    from graphrelease.audit.statistics import louvain_partition, modularity

    if graph.num_nodes != members.size:
        return {k: float("nan") for k in COMMUNITY_LEGEND}
    agreement = partition_agreement(members, louvain_partition(graph, seed=seed))
    return {"input_communities_modularity": modularity(graph, members),
            "input_communities_nmi": agreement["community_nmi"],
            "input_communities_ami": agreement["community_ami"]}


def _nanmean(values: Sequence[float]) -> float:
    """Mean of the finite values; NaN (not a RuntimeWarning on the CLI) when none is, e.g. CPL of an empty graph."""
    a = np.asarray(values, dtype=float)
    a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


def _subsample(graphs: Sequence[Graph], k: int, rng: np.random.Generator) -> list[Graph]:
    if len(graphs) <= k:
        return list(graphs)
    return [graphs[i] for i in np.sort(rng.choice(len(graphs), size=k, replace=False))]


def _degree_hist(graphs: Sequence[Graph]) -> list[float]:
    """Pooled degree distribution p_k over all graphs (fraction of nodes with degree k)."""
    deg = np.concatenate([g.degrees() for g in graphs])
    h = np.bincount(deg).astype(float)
    return (h / h.sum()).tolist()


def _table1_row(rel: ReleaseInput, stats_rel: list[dict[str, float]], stats_orig: dict[str, float]
                ) -> dict[str, Any]:
    row: dict[str, Any] = {"release": rel.label, "method": rel.method, "mode": rel.mode, "epsilon": rel.epsilon,
                           "guarantee": rel.guarantee}
    errs = []
    for key, stat, _ in TABLE1_COLUMNS:
        diffs = [abs(s[stat] - stats_orig[stat]) for s in stats_rel
                 if np.isfinite(s.get(stat, np.nan)) and np.isfinite(stats_orig.get(stat, np.nan))]
        row[key] = float(np.mean(diffs)) if diffs else None
        # Counts (LCC size, triangles) divide by at least 1, as in the verdict: a triangle-free input (a grid, a tree)
        # made the mean 5e12 for a release with 5 triangles.
        rels = [relative_error(s[stat], stats_orig[stat], count=stat in COUNTS) for s in stats_rel
                if np.isfinite(s.get(stat, np.nan)) and np.isfinite(stats_orig.get(stat, np.nan))]
        if rels:
            errs.append(float(np.mean(rels)))
    row["mean_relative_error"] = float(np.mean(errs)) if errs else None
    return row


def _motif_stage(result: AuditResult, orig_graphs: list[Graph], rels: list[ReleaseInput], *, seed: int,
                 motif_size: int, rng: np.random.Generator) -> None:
    from graphrelease.audit import motifs

    sizes = tuple(range(3, motif_size + 1))
    keep = np.array([gl.index for gl in motifs.GRAPHLETS if gl.size in sizes], dtype=np.int64)
    methods: dict[str, str] = {}

    def vec(graphs: list[Graph], who: str) -> np.ndarray:
        total = np.zeros(keep.size)
        for g in graphs:
            c = motifs.graphlet_counts(g, sizes=sizes, seed=seed)
            total += c.counts[keep]
            for k, how in c.method.items():
                if not how.startswith("exact"):
                    methods[f"{who} size {k}"] = how
        return total

    sample = _subsample(orig_graphs, COLLECTION_STAT_GRAPHS, rng)
    v_orig = vec(sample, "original")
    d_orig = np.sum([motifs.degree_vector(g) for g in sample], axis=0)
    out: dict[str, Any] = {"names": [motifs.GRAPHLET_NAMES[i] for i in keep], "original": v_orig.tolist(),
                           "releases": {}, "sizes": list(sizes)}
    for rel in rels:
        gs = _subsample(rel.graphs, COLLECTION_STAT_GRAPHS, rng)
        v = vec(gs, rel.label)
        d = np.sum([motifs.degree_vector(g) for g in gs], axis=0)
        out["releases"][rel.label] = {"vector": v.tolist(),
                                      "motif_cosine": motifs.cosine_similarity(v, v_orig),
                                      "degree_cosine": motifs.cosine_similarity(d, d_orig)}
    out["estimated"] = methods
    for who, how in methods.items():
        result.notes.append(f"motif counts of {who}: {how}")
    result.motifs = out


def _mmd_stage(result: AuditResult, orig_graphs: list[Graph], rels: list[ReleaseInput],
               rng: np.random.Generator) -> None:
    from graphrelease.audit import mmd

    a = _subsample(orig_graphs, COLLECTION_STAT_GRAPHS, rng)
    for rel in rels:
        b = _subsample(rel.graphs, COLLECTION_STAT_GRAPHS, rng)
        result.mmd[rel.label] = {k: float(v) for k, v in mmd.all_mmds(a, b).items()}


def _downstream_stage(result: AuditResult, original: Graph | GraphCollection, rel: ReleaseInput, *, seed: int,
                      fast: bool) -> None:
    from graphrelease.audit import downstream

    out: list[dict[str, Any]] = []
    if isinstance(original, GraphCollection):
        out.append(downstream.graph_classification_utility(
            original, rel.graphs, rel.graph_labels, seed=seed, epochs=10 if fast else 30))
    else:
        released = rel.graphs[0]
        out.append(downstream.link_prediction_utility(original, released, seed=seed))
        out.append(downstream.node_classification_utility(original, released, seed=seed,
                                                          epochs=30 if fast else 100))
        if len(rel.graphs) > 1:
            out.append({"task": "note", "skipped": f"downstream tasks use the first of {len(rel.graphs)} graphs"})
    result.downstream[rel.label] = out


def _released_model_scorer(rel: ReleaseInput, original: Graph, result: AuditResult
                           ) -> Callable[[np.ndarray], np.ndarray] | None:
    """Edge scores from the release's model (``model/`` written by ``graphrelease synth``), when it has any.

    Only generators that release per-node decoder embeddings or ``edge_probabilities`` give a score beyond the
    released graphs' adjacency (already attacked as ``membership_adjacency``).
    """
    if rel.path is None:
        return None
    from graphrelease.release import GENERATOR_FILE, load_fitted

    if not (Path(rel.path) / GENERATOR_FILE).is_file():
        return None
    try:
        _, fitted = load_fitted(Path(rel.path))
    except Exception as err:  # a model we cannot load is reported, the rest of the audit goes on
        result.notes.append(f"{rel.label}: released model not loaded for the membership attack ({err})")
        return None
    if not type(fitted).releases_embeddings:
        return None
    from graphrelease.audit.empirical import canary_scores_from_fitted

    rng = np.random.default_rng(0)
    return lambda pairs: canary_scores_from_fitted(fitted, original, pairs, rng, samples=1)


def _method_factory(rel: ReleaseInput) -> Callable[[], Any] | None:
    """Constructor of the release's method with the options it was made with (``release.load_method``), or None
    when it is not a registered generator."""
    import inspect

    from graphrelease.generators import GENERATORS
    from graphrelease.release import GENERATOR_FILE, load_method

    if rel.method is None or rel.method not in GENERATORS or rel.epsilon is None or rel.delta is None:
        return None
    if rel.path is not None and (Path(rel.path) / GENERATOR_FILE).is_file():
        return load_method(rel.path).build
    cls = GENERATORS.get(rel.method)
    kwargs = {}
    if rel.mode and "mode" in inspect.signature(cls.__init__).parameters:
        kwargs["mode"] = rel.mode
    return lambda: cls(**kwargs)


def _attack_stage(result: AuditResult, original: Graph, rel: ReleaseInput, attacks: Sequence[str], *, seed: int,
                  edge_scorers: dict[str, Callable[[np.ndarray], np.ndarray]], refit: bool = False) -> None:
    from graphrelease.audit import attacks as atk

    rng = np.random.default_rng(seed)
    out: dict[str, Any] = {}
    released = rel.graphs[0]
    non_edges = atk.count_non_edges(original)
    if min(original.num_edges, non_edges) < atk.MIN_ATTACK_PAIRS:
        # The attacks rank edges against non-edges: a (nearly) empty or complete graph leaves one side empty.
        result.notes.append(f"{rel.label}: attacks skipped (the original has {original.num_edges} edges and "
                            f"{non_edges} non-edges; they need {atk.MIN_ATTACK_PAIRS} of each)")
        return
    if "link_inference" in attacks:
        # Structure-only attacker: no re-training is possible from a release directory, so every original edge is
        # a candidate; proximity in the release (Adamic-Adar) after aligning nodes.
        align = "identity" if released.num_nodes == original.num_nodes else "degree"
        out["link_inference"] = atk.link_inference_on_release(original, released, method="adamic_adar",
                                                              alignment=align, rng=rng, label=rel.label)
        out["link_inference_reference"] = atk.link_inference_on_release(
            original, original, method="adamic_adar", alignment="identity", rng=np.random.default_rng(seed),
            label="original")
        make = _method_factory(rel) if refit else None
        if refit and make is None:
            result.notes.append(f"{rel.label}: hidden-link attack skipped (certificate names no registered "
                                "generator with epsilon and delta to re-fit)")
        if make is not None:
            from graphrelease.privacy.budget import Budget

            def release_fn(train: Graph) -> Graph:
                fitted = make().fit(train, Budget(epsilon=rel.epsilon, delta=rel.delta, adjacency="edge"))
                return fitted.sample(1, num_nodes=train.num_nodes, rng=np.random.default_rng(seed))[0]

            # The seed's protocol: hide 20% of the edges, re-fit the method on the rest, align by degree rank
            # (released graphs are anonymous), score the hidden edges by proximity in the new release.
            out["link_inference_hidden"] = atk.link_inference_attack(
                original, release_fn, hidden_fraction=0.2, method="adamic_adar", alignment="degree", rng=rng,
                label=rel.label).to_dict()
    if "membership" in attacks:
        k = min(5000, original.num_edges, non_edges)  # as many members as non-members, even on a dense graph
        members = original.edges[rng.choice(original.num_edges, size=k, replace=False)]
        non = atk.sample_non_edges(original, k, rng)
        if released.num_nodes == original.num_nodes:
            out["membership_adjacency"] = atk.edge_membership_attack(
                atk.proximity_scorer(released, "adjacency"), members, non, label=rel.label)
        scorer = edge_scorers.get(rel.label) or _released_model_scorer(rel, original, result)
        if scorer is not None:
            out["membership_model"] = atk.edge_membership_attack(scorer, members, non, label=rel.label)
    result.attacks[rel.label] = out


def _model_factory(rel: ReleaseInput) -> Callable[[], Any] | None:
    """Constructor of a model release's method with the released hyper-parameters (``model/config.json``)."""
    from graphrelease.models import MODELS
    from graphrelease.release import MODEL_CONFIG, load_method

    if rel.method is None or rel.method not in MODELS or rel.epsilon is None or rel.delta is None:
        return None
    if rel.path is not None and (Path(rel.path) / MODEL_CONFIG).is_file():
        # the seed is never released (a seeded re-fit would be uncertified); everything else is the released setting
        return load_method(rel.path).build
    return MODELS.get(rel.method)


def _canary_audit_stage(result: AuditResult, original: Graph | GraphCollection, rel: ReleaseInput, *, runs: int,
                        max_nodes: int, max_graphs: int, seed: int, progress: ProgressFn) -> None:
    """Re-fit the release's method (from its certificate) with and without a canary; see audit.empirical.

    The canary kind follows the certificate's adjacency: ``edge`` (a generator or a private model of one graph),
    ``node`` (a private model of one graph) or ``graph`` (a collection generator). The stated epsilon is audited
    also when the guarantee is none: the audit tests that statement.
    """
    from graphrelease.audit import empirical as emp

    kind = (rel.adjacency or "edge").split(":")[0]
    is_coll = isinstance(original, GraphCollection)
    rng = np.random.default_rng(seed)
    label_of = f"{rel.label} (re-fitted {rel.method}{'/' + rel.mode if rel.mode else ''})"

    def on_run(done: int, total: int) -> None:
        progress(f"canary audit {rel.label}: run {done}/{total}", done, total)

    def skip(why: str) -> None:
        result.notes.append(f"{rel.label}: canary audit skipped ({why})")

    if kind not in emp.CANARY_KINDS:
        return skip(f"no canary audit for adjacency '{kind}'; edge, node and graph are supported")
    if kind == "graph":
        if not is_coll:
            return skip("graph adjacency needs the original collection")
        make = _method_factory(rel)
        if make is None:
            return skip("certificate names no registered generator with epsilon and delta")
        coll = original
        if len(coll) > max_graphs:
            coll = coll.subset(np.sort(rng.choice(len(coll), size=max_graphs, replace=False)).tolist())
            result.notes.append(f"{rel.label}: canary audit on a uniform sample of {max_graphs} of the "
                                f"{len(original)} original graphs (re-fitting many times on all is too costly)")
        res = emp.run_graph_canary_audit(
            coll, emp.collection_generator_train_and_score(make, epsilon=rel.epsilon, delta=rel.delta),
            runs=runs, delta=rel.delta, claimed_epsilon=rel.epsilon, rng=rng, label=label_of, progress=on_run)
    else:
        if is_coll:
            return skip(f"{kind} canaries need one large graph; the original is a collection")
        graph = original
        if graph.num_nodes > max_nodes:
            top = np.sort(np.argsort(-graph.degrees(), kind="stable")[:max_nodes])
            graph = graph.induced_subgraph(top)
            result.notes.append(f"{rel.label}: canary audit on the induced subgraph of the {max_nodes} "
                                "highest-degree nodes (re-fitting the method many times on the whole graph is too "
                                "costly)")
        if kind == "edge":
            from graphrelease.audit.attacks import count_non_edges

            if count_non_edges(graph) < 1:
                return skip("the original is a complete graph: no non-edge to plant a canary edge on")
            make = _method_factory(rel)
            if make is not None:
                train_and_score = emp.generator_train_and_score(make, epsilon=rel.epsilon, delta=rel.delta)
            else:
                make = _model_factory(rel)
                if make is None:
                    return skip("certificate names no registered generator or private model with epsilon and delta")
                from graphrelease.models import MODELS
                from graphrelease.models.common import NodeModelMixin

                if graph.labels is None and issubclass(MODELS.get(rel.method), NodeModelMixin):
                    return skip("the release is a node classifier and the original has no node labels")
                train_and_score = emp.model_edge_train_and_score(make, epsilon=rel.epsilon, delta=rel.delta)
            res = emp.run_canary_audit(graph, train_and_score, runs=runs, delta=rel.delta,
                                       claimed_epsilon=rel.epsilon, rng=rng, label=label_of, progress=on_run)
        else:
            make = _model_factory(rel)
            if make is None:
                return skip("certificate names no registered private model with epsilon and delta")
            if graph.labels is None:
                return skip("node canaries score a classifier and the original has no node labels")
            canary = emp.choose_canary_node(graph, rng, slot=emp.model_canary_slot(make, graph.num_nodes))
            res = emp.run_node_canary_audit(
                graph, emp.model_train_and_score(make, epsilon=rel.epsilon, delta=rel.delta),
                runs=runs, delta=rel.delta, claimed_epsilon=rel.epsilon, rng=rng, canary=canary, label=label_of,
                progress=on_run)
    d = res.to_dict()
    d["guarantee"] = rel.guarantee
    result.empirical.append(d)


# ---------------------------------------------------------------------------------------------------- entry point
def run_audit(
    original: "str | Path | Graph | GraphCollection",
    releases: Sequence["str | Path | Graph | GraphCollection | ReleaseInput"],
    *,
    tasks: Sequence[str] = TASKS,
    attacks: Sequence[str] = ATTACKS,
    empirical: Sequence[Any] = (),
    edge_scorers: dict[str, Callable[[np.ndarray], np.ndarray]] | None = None,
    motif_size: int = 4,
    canary_runs: int = 0,
    canary_max_nodes: int = 300,
    canary_max_graphs: int = 100,
    refit_attack: bool = False,
    keys: Sequence[bytes | str | Path] = (),
    allow_mismatch: bool = False,
    seed: int = 0,
    fast: bool = False,
    progress: ProgressFn | None = None,
) -> AuditResult:
    """Audit ``releases`` against ``original``.

    Parameters
    ----------
    original:
        The private input (path or graph / collection).
    releases:
        Release directories, graph files or graphs; several give one comparison table and one line per release in
        each plot.
    tasks:
        Any of ``statistics``, ``motifs``, ``mmd`` (collections, or releases with several graphs), ``downstream``.
    attacks:
        Any of ``link_inference`` and ``membership`` (single graphs).
    empirical:
        Precomputed :class:`~graphrelease.audit.empirical.EmpiricalAuditResult` objects (or their dicts); shown
        beside the certified epsilon.
    edge_scorers:
        ``{release label: score(pairs)}`` for membership attacks on released models (``edge_probabilities``).
    motif_size:
        Largest graphlet size counted (4 by default; 5 adds the 21 five-node graphlets and costs much more).
    refit_attack:
        Also run the seed's hidden-link protocol: hide 20% of the edges, re-fit the release's method (from its
        certificate) on the rest, align by degree, and score the hidden edges.
    canary_runs:
        When > 0, an empirical privacy audit per release: its certificate's method is re-fitted ``canary_runs``
        times, half of them with a canary, and a lower bound on epsilon is reported beside the stated one. The
        canary follows the certificate's adjacency: an edge (graph releases and model releases under edge adjacency;
        at most ``canary_max_nodes`` highest-degree nodes of the original), a node (model releases under node
        adjacency, same subgraph) or a whole graph (collection releases under graph adjacency; at most
        ``canary_max_graphs`` original graphs).
    keys:
        The owner's input-binding keys, one per release in order (``<release>.key``): each certificate's HMAC must
        match ``original`` under its key, else :class:`~graphrelease.errors.GraphValidationError`.
    allow_mismatch:
        Audit releases whose graphs have another node count than a single-graph ``original`` (refused by default:
        they were not made from it); they are flagged in the verdict.
    """
    unknown = set(tasks) - set(TASKS)
    if unknown:
        raise OptionError(f"unknown audit task(s) {sorted(unknown)}; choose from {', '.join(TASKS)}")
    unknown = set(attacks) - set(ATTACKS)
    if unknown:
        raise OptionError(f"unknown attack(s) {sorted(unknown)}; choose from {', '.join(ATTACKS)}")
    if not releases:
        raise OptionError("give at least one release to audit")
    if motif_size not in (3, 4, 5):
        raise OptionError(f"motif size must be 3, 4 or 5, got {motif_size}")
    report = progress or (lambda stage, done, total: None)
    timings: dict[str, float] = {}
    rng = np.random.default_rng(seed)

    t0 = time.perf_counter()
    orig = load_original(original)
    rels = [load_release(r) for r in releases]
    labels = [r.label for r in rels]
    for i, lab in enumerate(labels):  # labels key every table: make them unique
        if labels.count(lab) > 1:
            rels[i].label = f"{lab} #{labels[:i + 1].count(lab)}"
    # Before any stage runs: an audit of a release against another input is confident nonsense.
    match_notes = check_releases_match(orig, rels, keys=keys, allow_mismatch=allow_mismatch)
    timings["load"] = time.perf_counter() - t0
    is_coll = isinstance(orig, GraphCollection)
    orig_graphs = list(orig.graphs) if is_coll else [orig]
    result = AuditResult(
        original={"name": orig.name, "kind": "collection" if is_coll else "graph", "num_graphs": len(orig_graphs),
                  "num_nodes": sum(g.num_nodes for g in orig_graphs),
                  "num_edges": sum(g.num_edges for g in orig_graphs)},
        releases=[r.summary() for r in rels],
        legend=dict(LEGEND),
        notes=match_notes,
    )
    # Model releases (no synthetic graphs) take part in the canary audit only.
    graph_rels = [r for r in rels if r.graphs]
    for r in rels:
        if not r.graphs:
            result.notes.append(f"{r.label}: a model release without synthetic graphs: only the canary audit "
                                "(--canary-runs) applies to it")
        if r.certificate is not None and r.guarantee != "proved":
            result.notes.append(f"{r.label}: guarantee {r.guarantee or 'missing'}"
                                f"{' (' + r.guarantee_reason + ')' if r.guarantee_reason else ''}; "
                                "its stated epsilon is not a DP guarantee")
        if r.integrity:
            result.notes.append(f"{r.label}: release does not match its manifest: " + "; ".join(r.integrity[:5]))
        if r.certificate is None and r.path is not None and Path(r.path).is_dir():
            result.notes.append(f"{r.label}: no certificate.json; no privacy claim")

    stages = [t for t in TASKS if t in tasks] + (["attacks"] if attacks else []) + (["empirical"] if empirical or canary_runs else [])
    total = len(stages)
    for step, stage in enumerate(stages):
        report(stage, step, total)
        t = time.perf_counter()
        if stage == "statistics":
            spectrum = not is_coll
            sample = _subsample(orig_graphs, COLLECTION_STAT_GRAPHS, rng)
            result.statistics["original"] = _stats_over(sample, seed=seed, spectrum=spectrum)
            result.degree_histograms["original"] = _degree_hist(orig_graphs)
            if is_coll and len(orig_graphs) > len(sample):
                result.notes.append(f"collection statistics averaged over {len(sample)} of {len(orig_graphs)} "
                                    "original graphs (uniform sample)")
            communities = None if is_coll else _input_communities(orig, result.statistics["original"], seed=seed)
            for r in graph_rels:
                gs = _subsample(r.graphs, COLLECTION_STAT_GRAPHS, rng)
                if is_coll:
                    per = [_stats_over(gs, seed=seed, spectrum=False)]
                else:
                    from graphrelease.audit.statistics import graph_statistics

                    per = [graph_statistics(g, seed=seed) for g in gs]
                    if communities is not None:
                        for g, p in zip(gs, per):
                            p.update(_communities_on(g, communities, seed=seed))
                result.statistics[r.label] = {k: _nanmean([p[k] for p in per]) for k in per[0]}
                result.degree_histograms[r.label] = _degree_hist(r.graphs)
                result.table1.append(_table1_row(r, per, result.statistics["original"]))
            from graphrelease.audit.statistics import STATISTIC_LEGEND

            result.legend.update({f"stat:{k}": v for k, v in STATISTIC_LEGEND.items()})
            if communities is not None:
                result.legend.update({f"stat:{k}": v for k, v in COMMUNITY_LEGEND.items()})
        elif stage == "motifs":
            _motif_stage(result, orig_graphs, graph_rels, seed=seed, motif_size=motif_size, rng=rng)
        elif stage == "mmd":
            if is_coll or any(len(r.graphs) > 1 for r in graph_rels):
                _mmd_stage(result, orig_graphs, graph_rels, rng)
            else:
                result.notes.append("MMD skipped: it compares sets of graphs and every input here is one graph")
        elif stage == "downstream":
            for r in graph_rels:
                _downstream_stage(result, orig, r, seed=seed, fast=fast)
        elif stage == "attacks":
            if is_coll:
                result.notes.append("structure attacks skipped: they need one large graph with node identities")
            else:
                for r in graph_rels:
                    _attack_stage(result, orig, r, attacks, seed=seed, edge_scorers=edge_scorers or {},
                                  refit=refit_attack)
        elif stage == "empirical":
            for e in empirical:
                result.empirical.append(e.to_dict() if hasattr(e, "to_dict") else dict(e))
            if canary_runs:
                for r in rels:
                    _canary_audit_stage(result, orig, r, runs=canary_runs, max_nodes=canary_max_nodes,
                                        max_graphs=canary_max_graphs, seed=seed, progress=report)
        timings[stage] = time.perf_counter() - t
    report("done", total, total)
    result.timings = timings
    from graphrelease.audit import verdict

    shapes = {"original": verdict.graph_shape(orig_graphs), **{r.label: verdict.graph_shape(r.graphs) for r in rels}}
    result.verdict = verdict.build_verdict(result.to_dict(), shapes)
    result.legend["verdict"] = verdict.VERDICT_LEGEND
    return result
