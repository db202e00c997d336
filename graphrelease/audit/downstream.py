"""Downstream utility of a release: train on the released artifact, test on held-out real data.

Collections (seed 'Secure Deep Graph Generation with Link Differential Privacy', Table 2 protocol): a GIN graph
classifier (Xu et al. 2019) trained on the synthetic graphs and tested on held-out real graphs, beside the same
classifier trained on the real training split (the ceiling). Synthetic graphs need labels: they inherit the label of
the graph they were generated from when the release provides them; otherwise the task is skipped with the reason.

Single graphs, where the release keeps the owner's node order (edge adjacency: the node set is public):

- **link prediction**: a spectral embedding of the released graph (top singular vectors of the symmetrically
  normalised adjacency with self-loops) and a logistic-regression edge classifier on Hadamard products, trained on
  released edges vs released non-edges, tested on real edges vs real non-edges (AUC, average precision). The ceiling
  trains the same pipeline on the original graph minus the test edges.
- **node classification**: a 2-layer GCN on the released structure with the (public) features and the labels of
  the training nodes, tested on held-out real nodes (accuracy); beside a features-only MLP (no structure) and the
  same GCN on the original structure (the ceiling).

All numbers are plain accuracies / AUCs on the held-out real data; no early stopping, no validation-based selection.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import scipy.sparse as sp

from graphrelease.errors import OptionError
from graphrelease.graph import Graph, GraphCollection


def _torch_seed(seed: int) -> None:
    import torch

    torch.manual_seed(seed)


def _skipped(task: str, reason: str) -> dict[str, Any]:
    return {"task": task, "skipped": reason}


# ---------------------------------------------------------------------------------------------------- collections
def _degree_onehot(g: Graph, max_degree: int) -> np.ndarray:
    d = np.minimum(g.degrees(), max_degree)
    x = np.zeros((g.num_nodes, max_degree + 1), dtype=np.float32)
    x[np.arange(g.num_nodes), d] = 1.0
    return x


def _to_data_list(graphs: Sequence[Graph], labels: np.ndarray, max_degree: int) -> list:
    import torch
    from torch_geometric.data import Data

    out = []
    for g, y in zip(graphs, labels):
        out.append(Data(x=torch.from_numpy(_degree_onehot(g, max_degree)), edge_index=g.edge_index(),
                        y=torch.tensor([int(y)]), num_nodes=g.num_nodes))
    return out


def _train_gin(train: list, num_classes: int, in_dim: int, *, epochs: int, hidden: int, seed: int):
    import torch
    from torch import nn
    from torch_geometric.loader import DataLoader
    from torch_geometric.nn import GINConv, global_add_pool

    _torch_seed(seed)

    class GIN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            dims = [in_dim, hidden, hidden, hidden]
            self.convs = nn.ModuleList(
                GINConv(nn.Sequential(nn.Linear(dims[i], hidden), nn.ReLU(), nn.Linear(hidden, hidden)))
                for i in range(3)
            )
            self.head = nn.Linear(hidden * 3, num_classes)

        def forward(self, data):
            h, outs = data.x, []
            for conv in self.convs:
                h = torch.relu(conv(h, data.edge_index))
                outs.append(global_add_pool(h, data.batch))
            return self.head(torch.cat(outs, dim=1))

    model = GIN()
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(seed)
    loader = DataLoader(train, batch_size=64, shuffle=True, generator=gen)
    model.train()
    for _ in range(epochs):
        for batch in loader:
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(batch), batch.y)
            loss.backward()
            opt.step()
    model.eval()
    return model


def _gin_accuracy(model, test: list) -> float:
    import torch
    from torch_geometric.loader import DataLoader

    correct = 0
    with torch.no_grad():
        for batch in DataLoader(test, batch_size=256):
            correct += int((model(batch).argmax(dim=1) == batch.y).sum())
    return correct / len(test)


def graph_classification_utility(
    real: GraphCollection,
    synthetic: Sequence[Graph] | None,
    synthetic_labels: np.ndarray | None,
    *,
    test_fraction: float = 0.3,
    epochs: int = 30,
    hidden: int = 32,
    max_degree: int = 31,
    seed: int = 0,
) -> dict[str, Any]:
    """GIN trained on synthetic graphs, tested on held-out real graphs; real-on-real is the ceiling.

    Node inputs are one-hot degrees capped at ``max_degree`` (the TU collections used here have no node features).
    The real collection is split once (stratified, ``seed``); the same real test split scores both classifiers.
    """
    task = "graph_classification"
    if real.graph_labels is None:
        return _skipped(task, "the original collection has no graph labels")
    labels = np.asarray(real.graph_labels)
    classes, y = np.unique(labels, return_inverse=True)
    if classes.size < 2:
        return _skipped(task, "the original collection has a single graph label")
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(real.graphs))
    tr, te = train_test_split(idx, test_size=test_fraction, random_state=seed, stratify=y)
    test = _to_data_list([real.graphs[i] for i in te], y[te], max_degree)
    in_dim = max_degree + 1
    ceiling = _train_gin(_to_data_list([real.graphs[i] for i in tr], y[tr], max_degree), classes.size, in_dim,
                         epochs=epochs, hidden=hidden, seed=seed)
    out: dict[str, Any] = {
        "task": task, "classifier": f"GIN (3 layers, hidden {hidden}, {epochs} epochs, degree one-hot inputs)",
        "real_train_graphs": int(tr.size), "real_test_graphs": int(te.size),
        "real_on_real_accuracy": _gin_accuracy(ceiling, test),
        "majority_class_accuracy": float(np.max(np.bincount(y[te])) / te.size),
    }
    if not synthetic:
        out["synthetic_skipped"] = "the release holds no synthetic graphs"
        return out
    if synthetic_labels is None:
        out["synthetic_skipped"] = ("the release does not say which label each synthetic graph inherits "
                                    "(graphs/graph_labels.csv)")
        return out
    syn_labels = np.asarray(synthetic_labels)
    if syn_labels.shape != (len(synthetic),):
        raise OptionError(f"{syn_labels.shape[0]} synthetic labels for {len(synthetic)} synthetic graphs")
    lookup = {c: i for i, c in enumerate(classes.tolist())}
    unknown = sorted(set(syn_labels.tolist()) - set(lookup))
    if unknown:
        raise OptionError(f"synthetic graph labels {unknown} do not occur in the original collection")
    syn_y = np.array([lookup[v] for v in syn_labels.tolist()], dtype=np.int64)
    model = _train_gin(_to_data_list(synthetic, syn_y, max_degree), classes.size, in_dim, epochs=epochs,
                       hidden=hidden, seed=seed)
    out["synthetic_graphs"] = len(synthetic)
    out["synthetic_on_real_accuracy"] = _gin_accuracy(model, test)
    return out


# ---------------------------------------------------------------------------------------------------- link prediction
def spectral_embedding(graph: Graph, dim: int, seed: int = 0) -> np.ndarray:
    """Top-``dim`` singular vectors of ``D^-1/2 (A + I) D^-1/2`` scaled by the square roots of their values."""
    from sklearn.utils.extmath import randomized_svd

    a = graph.to_csr().astype(np.float64) + sp.identity(graph.num_nodes, format="csr")
    d = np.asarray(a.sum(axis=1)).ravel()
    s = sp.diags(1.0 / np.sqrt(d))
    norm = (s @ a @ s).tocsr()
    k = max(1, min(dim, graph.num_nodes - 1))
    u, sig, _ = randomized_svd(norm, n_components=k, n_iter=5, random_state=seed)
    return u * np.sqrt(sig)[None, :]


def _pair_features(emb: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    return emb[pairs[:, 0]] * emb[pairs[:, 1]]


def _fit_edge_classifier(graph: Graph, emb: np.ndarray, rng: np.random.Generator, max_train: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from graphrelease.audit.attacks import count_non_edges, sample_non_edges

    m = min(graph.num_edges, max_train, count_non_edges(graph))  # balanced, even on a dense graph
    pos = graph.edges[rng.choice(graph.num_edges, size=m, replace=False)]
    neg = sample_non_edges(graph, m, rng)
    x = np.concatenate([_pair_features(emb, pos), _pair_features(emb, neg)])
    yy = np.concatenate([np.ones(m), np.zeros(m)])
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000)).fit(x, yy)


def link_prediction_utility(
    original: Graph,
    released: Graph,
    *,
    test_fraction: float = 0.1,
    dim: int = 32,
    max_train_pairs: int = 20000,
    max_test_pairs: int = 5000,
    seed: int = 0,
) -> dict[str, Any]:
    """Link prediction trained on the release, tested on real edges vs real non-edges (AUC / AP)."""
    task = "link_prediction"
    if released.num_nodes != original.num_nodes:
        return _skipped(task, f"the release has {released.num_nodes} nodes, the original {original.num_nodes}: "
                              "node identities are needed to test on real pairs")
    if released.num_edges < 2 or original.num_edges < 10:
        return _skipped(task, "too few edges to train or test")
    from sklearn.metrics import average_precision_score, roc_auc_score

    from graphrelease.audit.attacks import MIN_ATTACK_PAIRS, count_non_edges, sample_non_edges, split_edges

    # The classifiers learn edges against non-edges of the graph they train on and are tested on the original's.
    if min(count_non_edges(original), count_non_edges(released)) < MIN_ATTACK_PAIRS:
        return _skipped(task, "too few non-edges to train or test (a (nearly) complete graph)")

    rng = np.random.default_rng(seed)
    train, held = split_edges(original, test_fraction, rng)
    test_pairs = min(max_test_pairs, count_non_edges(original))  # as many held-out edges as non-edges
    if held.shape[0] > test_pairs:
        held = held[rng.choice(held.shape[0], size=test_pairs, replace=False)]
    neg = sample_non_edges(original, held.shape[0], rng)
    yy = np.concatenate([np.ones(held.shape[0]), np.zeros(neg.shape[0])])

    def evaluate(g: Graph) -> dict[str, float]:
        emb = spectral_embedding(g, dim, seed)
        clf = _fit_edge_classifier(g, emb, rng, max_train_pairs)
        s = clf.decision_function(np.concatenate([_pair_features(emb, held), _pair_features(emb, neg)]))
        return {"auc": float(roc_auc_score(yy, s)), "average_precision": float(average_precision_score(yy, s))}

    rel = evaluate(released)
    ceil = evaluate(train)
    return {
        "task": task,
        "model": f"spectral embedding (dim {dim}) + logistic regression on Hadamard pair features",
        "test_edges": int(held.shape[0]),
        "release_auc": rel["auc"], "release_ap": rel["average_precision"],
        "original_auc": ceil["auc"], "original_ap": ceil["average_precision"],
        "note": "original = same pipeline on the input minus the test edges; the release was made from the whole "
                "input, so its test edges were part of the private data",
    }


# ---------------------------------------------------------------------------------------------------- node classification
def _dense(x) -> np.ndarray:
    return x.toarray() if sp.issparse(x) else np.asarray(x)


def _train_node_model(x, edge_index, y, train_idx, test_idx, *, use_graph: bool, epochs: int, hidden: int,
                      seed: int) -> float:
    import torch
    from torch import nn
    from torch_geometric.nn import GCNConv

    _torch_seed(seed)
    n_cls = int(y.max()) + 1

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            if use_graph:
                self.l1 = GCNConv(x.shape[1], hidden, cached=True)
                self.l2 = GCNConv(hidden, n_cls, cached=True)
            else:
                self.l1, self.l2 = nn.Linear(x.shape[1], hidden), nn.Linear(hidden, n_cls)

        def forward(self, h):
            if use_graph:
                h = torch.relu(self.l1(h, edge_index))
                h = nn.functional.dropout(h, 0.5, self.training)
                return self.l2(h, edge_index)
            h = torch.relu(self.l1(h))
            h = nn.functional.dropout(h, 0.5, self.training)
            return self.l2(h)

    model = Net()
    opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(epochs):
        model.train()
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x)[train_idx], y[train_idx])
        loss.backward()
        opt.step()
    model.eval()
    with torch.no_grad():
        pred = model(x).argmax(dim=1)
    return float((pred[test_idx] == y[test_idx]).float().mean())


def node_classification_utility(
    original: Graph,
    released: Graph,
    *,
    train_fraction: float = 0.3,
    epochs: int = 100,
    hidden: int = 64,
    max_features: int = 256,
    seed: int = 0,
) -> dict[str, Any]:
    """GCN on the released structure + public features and train labels, tested on held-out real nodes."""
    task = "node_classification"
    if original.features is None or original.labels is None:
        return _skipped(task, "the original graph has no node features and labels")
    if released.num_nodes != original.num_nodes:
        return _skipped(task, f"the release has {released.num_nodes} nodes, the original {original.num_nodes}: "
                              "node identities are needed to attach features and labels")
    import torch

    labelled = np.flatnonzero(original.labels >= 0)
    if labelled.size < 10 or np.unique(original.labels[labelled]).size < 2:
        return _skipped(task, "too few labelled nodes or a single class")
    rng = np.random.default_rng(seed)
    perm = rng.permutation(labelled)
    n_train = max(1, int(round(train_fraction * perm.size)))
    train_idx = torch.from_numpy(np.sort(perm[:n_train]))
    test_idx = torch.from_numpy(np.sort(perm[n_train:]))
    feats = original.features
    note = ""
    if feats.shape[1] > max_features:
        # Public features under edge adjacency: a rank-reduced copy keeps the three models cheap on wide inputs.
        from sklearn.decomposition import TruncatedSVD

        feats = TruncatedSVD(max_features, random_state=seed).fit_transform(feats)
        note = f"; features reduced from {original.features.shape[1]} to {max_features} dims by truncated SVD"
    x = torch.from_numpy(_dense(feats).astype(np.float32))
    y = torch.from_numpy(np.where(original.labels >= 0, original.labels, 0).astype(np.int64))
    kw = {"epochs": epochs, "hidden": hidden, "seed": seed}
    return {
        "task": task,
        "model": f"2-layer GCN (hidden {hidden}, {epochs} epochs, no early stopping); MLP reference without edges"
                 + note,
        "train_nodes": int(n_train), "test_nodes": int(test_idx.numel()),
        "release_gcn_accuracy": _train_node_model(x, released.edge_index(), y, train_idx, test_idx, use_graph=True,
                                                  **kw),
        "original_gcn_accuracy": _train_node_model(x, original.edge_index(), y, train_idx, test_idx,
                                                   use_graph=True, **kw),
        "features_only_mlp_accuracy": _train_node_model(x, None, y, train_idx, test_idx, use_graph=False, **kw),
    }
