"""Attacks that score a canary in a real release: generators (edge canaries on the fitted model and its samples),
private models (node and edge canaries) and collection generators (graph canaries), each wrapped as the
``train_and_score`` callable the empirical audit loop runs."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection

from graphrelease.audit.canaries import (
    GraphTrainAndScore,
    NodeCanary,
    NodeTrainAndScore,
    TrainAndScore,
    node_canary_graphs,
    pair_keys,
    public_training_slot,
)

# ---------------------------------------------------------------------------------------------------- real generators
def canary_scores_from_fitted(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                              samples: int = 1) -> np.ndarray:
    """Membership scores of canary pairs from a fitted generator, strongest signal first.

    1. the decoder's inner product ``f(z_u) . f(z_v)`` when it releases per-node embeddings
       (``fitted.embeddings(n, rng)``, node order kept), averaged over ``samples`` draws;
    2. otherwise the share of ``samples`` sampled graphs (with ``graph.num_nodes`` nodes, owner's node order) that
       contain the pair.
    Everything here reads only the fitted (released) object: it is what an attacker holding the release can do.
    """
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    if type(fitted).releases_embeddings and not _anonymous_nodes(fitted):
        acc = np.zeros(canaries.shape[0])
        for _ in range(samples):
            emb = np.asarray(fitted.embeddings(graph.num_nodes, rng), dtype=np.float64)
            acc += np.einsum("ij,ij->i", emb[canaries[:, 0]], emb[canaries[:, 1]])
        return acc / samples
    return _sampled_pair_share(fitted, graph, canaries, rng, samples=samples, align=None)


def _anonymous_nodes(fitted: Any) -> bool:
    """True for a decoder released without per-node latents: its sampled nodes are exchangeable draws from the
    prior, so node ``i`` of a sample is not the owner's node ``i`` (DPGVAE modes paper, buckets, graphs)."""
    return type(fitted).releases_embeddings and not fitted.has_node_latents


def _degree_alignment(base_degrees: np.ndarray, sampled: Graph) -> np.ndarray:
    """owner node -> sampled node with the same degree rank (the seed's alignment for anonymous releases)."""
    own = np.argsort(-base_degrees, kind="stable")
    theirs = np.argsort(-sampled.degrees(), kind="stable")
    out = np.empty_like(own)
    out[own] = theirs
    return out


def _sampled_pair_share(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                        samples: int, align: np.ndarray | None) -> np.ndarray:
    """Share of ``samples`` sampled graphs holding each canary pair; with ``align`` (the owner's degrees without
    the canaries) nodes are matched by degree rank, else by identity."""
    n = graph.num_nodes
    hits = np.zeros(canaries.shape[0])
    for g in fitted.sample(samples, num_nodes=n, rng=rng):
        if g.num_nodes != n:
            raise OptionError(f"generator sampled {g.num_nodes} nodes, the audit needs the owner's {n} nodes")
        pairs = canaries if align is None else np.sort(_degree_alignment(align, g)[canaries], axis=1)
        hits += np.isin(pair_keys(pairs, n), pair_keys(g.edges, n))
    return hits / samples


def _degrees_without(graph: Graph, canaries: np.ndarray) -> np.ndarray:
    """Degrees of ``graph`` minus the canary pairs it holds: the same attacker knowledge in ``in`` and ``out`` runs."""
    n = graph.num_nodes
    deg = graph.degrees().astype(np.int64).copy()
    present = np.isin(pair_keys(canaries, n), pair_keys(graph.edges, n))
    for u, v in canaries[present]:
        deg[u] -= 1
        deg[v] -= 1
    return deg


def edge_canary_attacks(fitted: Any, graph: Graph, canaries: np.ndarray, rng: np.random.Generator, *,
                        samples: int = 1) -> dict[str, np.ndarray]:
    """Every edge-canary attack that applies to ``fitted`` (only released objects are read), by name.

    * ``edge_probability`` / ``decoder_inner_product`` / ``sampled_graphs``: :func:`canary_scores_from_fitted`;
    * ``sampled_graphs_degree_aligned``: for decoders without per-node latents, the share of sampled graphs holding
      the canary pair after matching nodes by degree rank to the owner's graph without the canaries (an attacker
      knows every edge but the canary, the strong adversary of the DP definition);
    * ``released_edge_count``: the released expected edge count ``target_density * n(n-1)/2`` when the release
      carries one. It is DP in the sound modes and the exact ``|E|`` in ``mode=paper`` (its certificate declares
      the edge count as read without noise): one canary edge moves it by exactly 1.
    """
    canaries = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    out: dict[str, np.ndarray] = {}
    if _anonymous_nodes(fitted):
        out["sampled_graphs_degree_aligned"] = _sampled_pair_share(
            fitted, graph, canaries, rng, samples=samples, align=_degrees_without(graph, canaries))
    else:
        name = "decoder_inner_product" if type(fitted).releases_embeddings else "sampled_graphs"
        out[name] = canary_scores_from_fitted(fitted, graph, canaries, rng, samples=samples)
    density = (getattr(fitted, "config", None) or {}).get("target_density")
    if density is not None:
        n = graph.num_nodes
        out["released_edge_count"] = np.full(canaries.shape[0], float(density) * n * (n - 1) / 2)
    return out


def generator_train_and_score(make_generator: Callable[[], Any], *, epsilon: float, delta: float,
                              samples: int = 1, allow_uncertified: bool = True) -> TrainAndScore:
    """A ``train_and_score`` that fits a real generator under a fresh edge-adjacency ``Budget(epsilon, delta)`` and
    runs :func:`edge_canary_attacks` on the fitted (released) generator.

    The generator draws its own noise (``secure_generator``); ``seed`` only drives the audit's sampling of
    released graphs. ``allow_uncertified`` is needed to audit reproduction modes (``mode=paper``) whose
    certificate says ``guarantee: none`` — which is exactly what the audit is for.
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> dict[str, np.ndarray]:
        budget = Budget(epsilon=epsilon, delta=delta, adjacency="edge")
        fitted = make_generator().fit(g, budget)
        return edge_canary_attacks(fitted, g, canaries, np.random.default_rng(seed), samples=samples)

    return train_and_score


# ---------------------------------------------------------------------------------------------------- private models
def node_canary_model_scores(model: Any, graph: Graph, canary: NodeCanary) -> dict[str, list[float]]:
    """The released model's evidence for the canary node: its log-probability of the canary's label at the canary's
    slot (``log_prob``; a lower loss on a trained-on example is the classic membership signal, Yeom et al. 2018),
    or, for models that expose only class predictions, whether it predicts that label (``predicted_label``).

    ``graph`` is the graph WITH the canary (the attacker knows it): in ``out`` runs the model never saw it.
    """
    import torch

    if canary.label < 0:
        raise OptionError("a node canary for a classifier needs a label (the graph has no node labels)")
    if type(model).gives_logits:
        with torch.no_grad():
            logits = torch.as_tensor(model.logits(graph), dtype=torch.float64)
        logp = torch.log_softmax(logits, dim=1)[canary.slot]
        value = float(logp[canary.label]) if canary.label < logp.numel() else -math.inf
        return {"log_prob": [max(value, -1e6)]}
    pred = np.asarray(model.predict(graph))
    return {"predicted_label": [1.0 if int(pred[canary.slot]) == canary.label else 0.0]}


def model_train_and_score(make_model: Callable[[], Any], *, epsilon: float, delta: float,
                          adjacency: str = "node") -> NodeTrainAndScore:
    """A ``train_and_score`` for :func:`run_node_canary_audit` that trains a real private model (``MODELS``).

    ``epsilon`` is the TRAINING budget; ``math.inf`` trains without noise (the deliberately broken mechanism when
    the audit is told a finite ``claimed_epsilon``).
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canary: NodeCanary, seed: int) -> dict[str, list[float]]:
        budget = (Budget.unlimited(adjacency, delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency=adjacency))
        model = make_model()
        model.fit(g, budget)
        attacked = g
        if g.labels is None or int(g.labels[canary.slot]) != canary.label:
            # an out run: the attacker scores the canary as it knows it (features, label, edges) at its slot
            base = g.induced_subgraph(np.delete(np.arange(g.num_nodes), canary.slot))
            attacked, _ = node_canary_graphs(base, canary)
        return node_canary_model_scores(model, attacked, canary)

    return train_and_score


def model_canary_slot(make_model: Callable[[], Any], num_base_nodes: int) -> int:
    """A public training slot of ``num_base_nodes + 1`` slots for the model's public split settings."""
    cfg = getattr(make_model(), "config", None)
    return public_training_slot(num_base_nodes + 1, train_frac=float(getattr(cfg, "train_frac", 0.5)),
                                val_frac=float(getattr(cfg, "val_frac", 0.25)),
                                split_seed=int(getattr(cfg, "split_seed", 0)))


def _without_pairs(graph: Graph, pairs: np.ndarray) -> Graph:
    """``graph`` minus the edges in ``pairs`` (``u < v``): the attacker's view, the same in ``in`` and ``out`` runs."""
    n = graph.num_nodes
    keep = ~np.isin(pair_keys(graph.edges, n), pair_keys(pairs, n))
    return graph.replace(edges=graph.edges[keep])


def _released_view(model: Any, trained_on: Graph, known: Graph) -> Graph:
    """The graph to query a fitted model with so that the answer is a function of the release only.

    GAP (``H_1..H_K``), DPDGC (``Z~``) and GAP-link (``Z``) keep their noisy, already-charged aggregates keyed by
    the very graph object they were fitted on and return them when queried with it: that is the release. Any other
    query runs the released weights on the graph it is given (new aggregates, DPAR's power iteration, a GCN's
    message passing), which on the training graph would read its private edges outside the mechanism; those models
    are queried with ``known``, the training graph without the canaries.
    """
    return trained_on if model.holds_release_for(trained_on) else known


def _row_cosine(rows: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Cosine similarity of rows ``pairs[:, 0]`` and ``pairs[:, 1]`` (0 when a row is zero)."""
    a, b = rows[pairs[:, 0]], rows[pairs[:, 1]]
    norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
    return np.einsum("ij,ij->i", a, b) / np.maximum(norms, 1e-12)


def edge_canary_model_scores(model: Any, trained_on: Graph, canaries: np.ndarray) -> dict[str, np.ndarray]:
    """The released model's evidence that each canary pair is an edge, from its released output only, by name.

    * ``pair_score``: link models (``gap-link``, ``relational``) score the pair themselves (``score_pairs``);
    * ``embedding_cosine``: node models that release embeddings (``embed``: DPDGC's noisy ``Z~``, GAP's perturbed
      aggregates ``[H_0..H_K]``) — the cosine of the endpoints' rows: an edge adds each endpoint to the other's
      aggregate, which moves the two rows' similarity (either way: the bound tests both tails);
    * ``class_agreement``: models whose ``embed`` refuses (DPAR) — ``sum_c p_u(c) p_v(c)``, the probability that the
      endpoints get the same class from the released classifier's softmax (``logits``), or whether their predicted
      labels agree (``predict`` only).

    Fair test statistic: every score is computed from what the release contains. Cached aggregates are returned for
    the training graph object without being recomputed; every other query gets the training graph WITHOUT the
    canary edges (:func:`_released_view`), identical in ``in`` and ``out`` runs — the attacker of the DP definition
    knows every edge but the canary, so ``in`` and ``out`` scores differ only through the released mechanism output.
    """
    import torch

    pairs = np.asarray(canaries, dtype=np.int64).reshape(-1, 2)
    view = _released_view(model, trained_on, _without_pairs(trained_on, pairs))
    if type(model).pair_score is not None:
        return {"pair_score": np.asarray(model.score_pairs(view, pairs), dtype=np.float64).ravel()}
    try:
        emb = np.asarray(model.embed(view), dtype=np.float64)
    except (OptionError, NotImplementedError):
        emb = None  # DPAR: embeddings of a graph would read its structure at inference; score the classifier
    if emb is not None:
        return {"embedding_cosine": _row_cosine(emb.reshape(emb.shape[0], -1), pairs)}
    if type(model).gives_logits:
        with torch.no_grad():
            probs = torch.softmax(torch.as_tensor(model.logits(view), dtype=torch.float64), dim=1).numpy()
        return {"class_agreement": np.einsum("ij,ij->i", probs[pairs[:, 0]], probs[pairs[:, 1]])}
    pred = np.asarray(model.predict(view))
    return {"class_agreement": (pred[pairs[:, 0]] == pred[pairs[:, 1]]).astype(np.float64)}


def model_edge_train_and_score(make_model: Callable[[], Any], *, epsilon: float, delta: float) -> TrainAndScore:
    """A ``train_and_score`` for :func:`run_canary_audit` that trains a real private model (``MODELS``) under edge
    adjacency and scores the canary pairs with :func:`edge_canary_model_scores`.

    ``epsilon`` is the TRAINING budget, a fresh ``Budget(epsilon, delta, adjacency="edge")`` per run; ``math.inf``
    trains without noise (the deliberately broken mechanism when the audit is told a finite ``claimed_epsilon``).
    The model draws its own noise; ``seed`` is unused (the scores are deterministic given the release). The canary
    pairs are :func:`run_canary_audit`'s, as for generators: uniformly random non-edges of the base graph
    (:func:`choose_canary_edges`).
    """
    from graphrelease.privacy.budget import Budget

    def train_and_score(g: Graph, canaries: np.ndarray, seed: int) -> dict[str, np.ndarray]:
        budget = (Budget.unlimited("edge", delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency="edge"))
        model = make_model()
        model.fit(g, budget)
        return edge_canary_model_scores(model, g, canaries)

    return train_and_score


# ---------------------------------------------------------------------------------------------------- collections
def graph_canary_attacks(fitted: Any, canary: Graph, rng: np.random.Generator, *, samples: int = 8
                         ) -> dict[str, list[float]]:
    """Graph-canary attacks on a fitted collection generator (released objects only), by name.

    * ``node_count_probability``: the released node-count distribution at the canary's size (a DP histogram under
      graph adjacency) — when the release carries one;
    * ``decoder_log_likelihood``: a Monte-Carlo estimate of the canary's log-likelihood under the released decoder,
      ``log mean_k prod_{i<j} Bern(A_ij; sigmoid(f(z_i).f(z_j) + b + offset))`` over ``samples`` prior draws ``z``,
      the offset calibrated to the released density as in sampling — when the release is such a decoder;
    * ``sampled_graph_distance``: otherwise minus the smallest relative (node count, edge count) distance between
      the canary and ``samples`` sampled graphs.
    """
    out: dict[str, list[float]] = {}
    config = getattr(fitted, "config", None) or {}
    nc = config.get("node_counts")
    if nc is not None:
        values, probs = np.asarray(nc["values"]), np.asarray(nc["probs"], dtype=np.float64)
        p = probs[values == canary.num_nodes]
        out["node_count_probability"] = [float(p.sum() / max(probs.sum(), 1e-300))]
    if type(fitted).releases_embeddings and config.get("target_density") is not None:
        from scipy.special import logsumexp

        from graphrelease.generators.sampling import calibrate_offset

        n = canary.num_nodes
        adj = np.zeros((n, n), dtype=bool)
        adj[canary.edges[:, 0], canary.edges[:, 1]] = True
        iu = np.triu_indices(n, k=1)
        a = adj[iu]
        bias = float(fitted.decoder["dec.bias"][0])
        target = float(config["target_density"]) * n * (n - 1) / 2
        lls = []
        for _ in range(samples):
            emb = np.asarray(fitted.embeddings(n, rng), dtype=np.float64)
            offset = calibrate_offset(emb, bias, target, rng=rng)
            logit = (emb @ emb.T)[iu] + bias + offset
            # log sigmoid(x) = -log(1 + e^-x), stable through logaddexp
            lls.append(float(np.sum(np.where(a, -np.logaddexp(0.0, -logit), -np.logaddexp(0.0, logit)))))
        out["decoder_log_likelihood"] = [float(logsumexp(lls) - math.log(len(lls)))]
    if not out:
        dists = []
        for g in fitted.sample(samples, rng=rng):
            dists.append(abs(g.num_nodes - canary.num_nodes) / canary.num_nodes
                         + abs(g.num_edges - canary.num_edges) / max(canary.num_edges, 1))
        out["sampled_graph_distance"] = [-float(min(dists))]
    return out


def collection_generator_train_and_score(make_generator: Callable[[], Any], *, epsilon: float, delta: float,
                                         adjacency: str = "graph", samples: int = 8) -> GraphTrainAndScore:
    """A ``train_and_score`` for :func:`run_graph_canary_audit`: fit a real generator on the collection under a
    fresh ``Budget(epsilon, delta, adjacency)`` (``math.inf``: no noise) and run :func:`graph_canary_attacks`."""
    from graphrelease.privacy.budget import Budget

    def train_and_score(coll: GraphCollection, canary: Graph, seed: int) -> dict[str, list[float]]:
        budget = (Budget.unlimited(adjacency, delta=delta) if math.isinf(epsilon)
                  else Budget(epsilon=epsilon, delta=delta, adjacency=adjacency))
        fitted = make_generator().fit(coll, budget)
        return graph_canary_attacks(fitted, canary, np.random.default_rng(seed), samples=samples)

    return train_and_score
