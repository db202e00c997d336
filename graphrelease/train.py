"""Library calls behind ``graphrelease train`` / ``embed`` / ``predict``: fit a registered model under a budget and
write a release bundle (model weights or DP embeddings + certificate + manifest), or run a released model.

``fit_model`` is the scriptable core (no files): it returns the fitted model, its budget (with the ledger) and the
accuracy on the held-out test nodes. Test labels are used only for that number, never for model selection.

Example
-------
>>> from graphrelease.io import load_default_graph
>>> run = fit_model(load_default_graph(), "gap", adjacency="edge", epsilon=1.0,
...                 options={"encoder_epochs": 2, "epochs": 2})              # doctest: +SKIP
>>> 0.0 <= run.test_accuracy <= 1.0                                          # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from graphrelease.errors import OptionError, UncertifiedError
from graphrelease.graph import Graph

TASKS = ("node-classification", "link-prediction")


@dataclass
class ModelRun:
    """A fitted model with its budget and measured accuracy."""

    model: Any
    budget: Any
    method: str
    adjacency: str
    test_accuracy: float
    train_accuracy: float
    fit_seconds: float
    epsilon_spent: float
    #: link prediction: AUC of held-out real edges vs as many sampled non-edges (nan for node classification)
    test_auc: float = float("nan")
    #: the certificate's node-set entry (:func:`graphrelease.privacy.public_inputs.node_set_assumption`)
    node_public: dict = field(default_factory=dict)
    #: the input as read (the release is bound to it by an HMAC); never written anywhere
    input_graph: Any = field(default=None, repr=False)


@dataclass
class ReleaseReport:
    """What a ``train`` / ``embed`` call wrote and measured."""

    out_dir: Path
    method: str
    adjacency: str
    epsilon: float
    epsilon_spent: float
    delta: float
    test_accuracy: float
    guarantee: str
    artifacts: list[str] = field(default_factory=list)
    test_auc: float | None = None  # link prediction only
    key_path: Path | None = None  # the input-binding key, beside the release


#: ``--task link-prediction`` methods: the name given to ``train`` -> the registered link model
LINK_METHODS = {"gap": "gap-link", "gap-link": "gap-link", "relational": "relational"}
#: fraction of edges held out (public per-pair coins) to measure the test AUC
DEFAULT_TEST_FRAC = 0.1


@dataclass
class PredictReport:
    predictions: np.ndarray
    accuracy: float | None
    labelled: int
    out_path: Path | None
    pairs: np.ndarray | None = None  # link prediction: the scored pairs (predictions are their scores)


def load_input(path: str | Path | Graph | None, *, nodes: int | str | Path | None = None,
               input_format: str | None = None, features: str | Path | None = None,
               labels: str | Path | None = None) -> Graph:
    """A :class:`Graph` from a path (any supported format, with the reading options of
    :func:`graphrelease.io.read_graph`), a Graph, or ``None`` (the embedded Cora)."""
    read_options = {k: v for k, v in {"nodes": nodes, "features": features, "labels": labels}.items()
                    if v is not None}
    if isinstance(path, Graph) or path is None:
        if read_options or input_format is not None:
            raise OptionError(f"{', '.join(sorted(read_options) or ['--format'])} apply to an input file")
        if isinstance(path, Graph):
            return path
    from graphrelease import io

    if path is None:
        return io.load_default_graph()
    data = io.read_graph(path, input_format, **read_options).data
    if not isinstance(data, Graph):
        raise OptionError(f"'{path}' holds a graph collection; node models need one graph")
    return data


def make_budget(*, adjacency: str, epsilon: float, delta: float, accountant: str = "rdp"):
    from graphrelease.privacy.budget import Budget

    if math.isinf(float(epsilon)):
        return Budget.unlimited(adjacency, delta=delta)
    return Budget(epsilon=epsilon, delta=delta, adjacency=adjacency, accountant=accountant)


def fit_model(
    graph: Graph | str | Path | None,
    method: str,
    *,
    adjacency: str = "edge",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: str = "rdp",
    options: dict[str, Any] | None = None,
    progress: Callable[[], None] | None = None,
    node_set: str | None = None,
    read_options: dict[str, Any] | None = None,
    allow_uncertified: bool = True,
) -> ModelRun:
    """Fit ``method`` (a name in ``MODELS``) on ``graph`` under (epsilon, delta, adjacency).

    ``node_set``: ``"declared"`` (default) refuses a graph whose node set was read off its edges;
    ``"from-edges"`` accepts it, disclosed in the certificate (:mod:`graphrelease.privacy.public_inputs`).
    ``read_options``: ``nodes``, ``input_format``, ``features``, ``labels`` for a path input (:func:`load_input`).
    """
    from graphrelease.models import MODELS
    from graphrelease.privacy.public_inputs import check_policy, node_set_assumption

    node_set = check_policy(node_set)
    source = None if isinstance(graph, Graph) or graph is None else str(graph)
    graph = load_input(graph, **(read_options or {}))
    cls = MODELS.get(method)
    budget = make_budget(adjacency=adjacency, epsilon=epsilon, delta=delta, accountant=accountant)
    kind = budget.ledger.adjacency.kind.value
    node_public = node_set_assumption(graph, adjacency=kind, policy=node_set, source=source)
    if kind not in cls.adjacencies:
        raise OptionError(f"method '{method}' supports --adjacency {sorted(cls.adjacencies)}, not '{adjacency}'")
    if getattr(cls, "non_private", False) and not budget.is_unlimited:
        raise OptionError(f"method '{method}' is a non-private baseline: run it with --epsilon inf")
    options = dict(options or {})
    declared_classes = options.pop("num_classes", None)
    model = cls(**options)
    node_public.update(_class_set_assumption(model, kind, declared_classes))
    if kind == "node" and cls.needs_degree_bound_under_node_adjacency and not allow_uncertified:
        cap, top = int(model.config.degree_cap), int(graph.degrees().max(initial=0))
        if top > cap:  # decided now, not after training: the projection would drop edges and void the proof
            raise UncertifiedError(
                f"under node adjacency the proof needs every degree <= degree_cap={cap}, but the input's largest "
                f"degree is {top}: declare a bound that holds with --set degree_cap={top}, or pass "
                "--allow-uncertified")
    start = time.perf_counter()
    model.fit(graph, budget, progress=_step_reporter(progress, budget))
    elapsed = time.perf_counter() - start
    spent = 0.0 if budget.is_unlimited else budget.spent_epsilon()
    return ModelRun(model, budget, method, budget.ledger.adjacency.name, float(model.test_accuracy),
                    float(model.train_accuracy), elapsed, float(spent), node_public=node_public, input_graph=graph)


def _step_reporter(progress: Callable[..., None] | None, budget: Any) -> Callable[[], None] | None:
    """The models call ``progress()`` once per step; the caller gets ``progress(steps_done, epsilon_spent)``, with
    the epsilon recomputed at most twice a second (accounting is not free)."""
    if progress is None:
        return None
    state = {"steps": 0, "eps": 0.0, "at": 0.0}

    def tick() -> None:
        state["steps"] += 1
        now = time.perf_counter()
        if now - state["at"] > 0.5 and not budget.is_unlimited and len(budget.ledger):
            state["eps"], state["at"] = float(budget.spent_epsilon()), now
        progress(state["steps"], state["eps"])

    return tick


def _class_set_assumption(model: Any, kind: str, declared: Any) -> dict[str, str]:
    """The label set is public under edge adjacency (labels are not the private unit); under node and k-neighbor
    adjacency labels are private, so the number of classes (the width of the released output layer) must be
    declared by the owner, not read off the labels."""
    from graphrelease.models.common import NodeModelMixin

    if not isinstance(model, NodeModelMixin):
        if declared is not None:
            raise OptionError("--set num_classes applies to node classification models")
        return {}
    if declared is not None:
        try:
            model.declared_num_classes = int(declared)
        except (TypeError, ValueError):
            raise OptionError(f"--set num_classes must be an integer, got {declared!r}") from None
        if model.declared_num_classes < 2:
            raise OptionError(f"--set num_classes must be >= 2, got {declared}")
        return {"labels": f"the label set 0..{model.declared_num_classes - 1} was declared by the owner "
                          f"(num_classes={model.declared_num_classes}); the split of node slots is public"}
    if kind != "edge":
        raise OptionError(f"under {kind} adjacency the labels are private, so the number of classes cannot be read "
                          "off them: declare it with --set num_classes=K")
    return {}


def fit_link_model(
    graph: Graph | str | Path | None,
    method: str,
    *,
    adjacency: str = "edge",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: str = "rdp",
    options: dict[str, Any] | None = None,
    progress: Callable[[], None] | None = None,
    node_set: str | None = None,
    read_options: dict[str, Any] | None = None,
) -> tuple[ModelRun, Graph]:
    """Fit a link model on the graph minus held-out edges and measure the held-out AUC.

    Edges are held out by public per-pair coins (``test_frac``, ``split_seed`` options; see
    :mod:`graphrelease.models.link`): the model never reads them, so its guarantee covers the input graph (one edge
    of the input changes the training graph by at most that edge). The AUC reads the held-out edges and the input's
    non-edges; it is reported to the caller, never released. Returns the run and the training graph.
    """
    from graphrelease.models.link import held_out_auc, holdout_split

    if method not in LINK_METHODS:
        raise OptionError(f"--task link-prediction supports --method {sorted(LINK_METHODS)}, not '{method}'")
    name = LINK_METHODS[method]
    from graphrelease.privacy.adjacency import Adjacency
    from graphrelease.privacy.public_inputs import check_policy, node_set_assumption

    node_set = check_policy(node_set)
    source = None if isinstance(graph, Graph) or graph is None else str(graph)
    graph = load_input(graph, **(read_options or {}))
    # Checked on the input: the training graph below is built from it and would look declared.
    node_public = node_set_assumption(graph, adjacency=Adjacency.parse(adjacency).kind.value, policy=node_set,
                                      source=source)
    opts = dict(options or {})
    test_frac = float(opts.pop("test_frac", DEFAULT_TEST_FRAC))
    split_seed = int(opts.get("split_seed", 0)) if name == "gap-link" else int(opts.pop("split_seed", 0))
    train_graph, test_edges = holdout_split(graph, test_frac=test_frac, seed=split_seed)
    run = fit_model(train_graph, name, adjacency=adjacency, epsilon=epsilon, delta=delta, accountant=accountant,
                    options=opts, progress=progress, node_set="from-edges")
    run.node_public = node_public
    run.input_graph = graph
    run.test_auc = held_out_auc(run.model.score_pairs, train_graph, test_edges, graph, seed=split_seed)
    return run, train_graph


def _certificate_factory(run: ModelRun, *, mode: str, released: list[str], extra: dict[str, Any]):
    from graphrelease.privacy.certificate import build_certificate

    from graphrelease.privacy.public_inputs import qualify_public_assumptions

    inferred = run.input_graph is not None and run.input_graph.node_set_inferred
    assumptions = qualify_public_assumptions(dict(getattr(run.model, "public_assumptions", {}) or {}),
                                             run.node_public, inferred=inferred)
    assumptions.setdefault("labels", "the label set (number of classes) and the public split of node slots "
                                     "(a fixed permutation of 0..n-1) are public")
    extra = {**dict(getattr(run.model, "selection_notes", {}) or {}), **dict(extra or {})}
    unsound = list(getattr(run.model, "uncertified_reasons", []) or [])
    if unsound:
        extra = {**dict(extra or {}), "unsound_preprocessing": unsound}

    def factory(artifacts: dict[str, str]) -> dict:
        return build_certificate(
            budget=run.budget, method=run.method, mode=mode, artifacts=artifacts, public_assumptions=assumptions,
            released=released, reproducible_seed_used=bool(getattr(run.model, "used_seed", False)), extra=extra,
        )

    return factory


def guarantee_of(certificate: dict) -> str:
    g = certificate.get("guarantee", "none")
    if isinstance(g, dict):
        g = g.get("status", g.get("value", "none"))
    return str(g)


def _binding(run: ModelRun, extra: dict[str, Any], signer: Any) -> tuple[bytes, dict[str, Any]]:
    """A fresh input-binding key (written only after the release is in place) and the certificate's extras for it
    and for the signature."""
    from graphrelease.privacy.binding import generate_key, input_hmac
    from graphrelease.privacy.signing import signature_statement

    key = generate_key()
    extra = {**extra, "input_hmac_sha256": input_hmac(run.input_graph, key),
             "input_binding": "HMAC-SHA256 of the input under a key kept by the data owner outside this release",
             "node_set_declared": not run.input_graph.node_set_inferred,
             "signature": signature_statement(signer)}
    return key, extra


def _preflight(out_dir: str | Path, *, force: bool, epsilon: float, delta: float, key_path: str | Path | None,
               signing_key: str | Path | None, source: Any = None) -> tuple[Path, Any]:
    """Everything that can be refused before training: the budget's numbers, an existing --out, the key's place,
    the signing key."""
    from graphrelease.defaults import check_delta, check_epsilon
    from graphrelease.release import plan_key_path, plan_out_path

    check_epsilon(epsilon, allow_inf=True)
    check_delta(delta)
    out = plan_out_path(out_dir, force=force)
    key_file = plan_key_path(out_dir, key_path, force=force)
    from graphrelease.defaults import warn_if_beside_input

    warn_if_beside_input(source, out, key_file)
    signer = None
    if signing_key is not None:
        from graphrelease.privacy.signing import load_private_key

        signer = load_private_key(signing_key)
    return key_file, signer


def _write_key(key_file: Path, key: bytes) -> None:
    from graphrelease.privacy.binding import write_key

    write_key(key_file, key)


def _finalize(writer, factory, allow_uncertified: bool, signer: Any = None) -> dict:
    """Build the certificate first; refuse an uncertified release unless allowed (nothing is left behind)."""
    from graphrelease.privacy.signing import sign_bytes

    holder: dict[str, dict] = {}

    def checked(artifacts: dict[str, str]) -> dict:
        cert = factory(artifacts)
        if guarantee_of(cert) != "proved" and not allow_uncertified:
            reason = cert.get("guarantee_reason") or cert.get("reason") or cert.get("guarantee")
            raise UncertifiedError(
                f"this release has no proved privacy guarantee ({reason}); pass --allow-uncertified to write it anyway"
            )
        holder["cert"] = cert
        return cert

    writer.finalize(checked, signer=None if signer is None else (lambda message: sign_bytes(signer, message)))
    return holder["cert"]


def train_model(
    input_graph: Graph | str | Path | None,
    out_dir: str | Path,
    *,
    method: str,
    task: str = "node-classification",
    adjacency: str = "edge",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: str = "rdp",
    options: dict[str, Any] | None = None,
    force: bool = False,
    allow_uncertified: bool = False,
    progress: Callable[[], None] | None = None,
    node_set: str | None = None,
    read_options: dict[str, Any] | None = None,
    key_path: str | Path | None = None,
    signing_key: str | Path | None = None,
) -> ReleaseReport:
    """Train and release the model's weights (``model/weights.safetensors``, ``model/config.json``) + certificate.

    The release is bound to its input by an HMAC under a fresh key written to ``key_path`` (default
    ``<out_dir>.key``, beside the release) once the release is in place; ``signing_key`` signs its manifest.
    """
    if task not in TASKS:
        raise OptionError(f"--task must be one of {TASKS}, got '{task}'")
    key_file, signer = _preflight(out_dir, force=force, epsilon=epsilon, delta=delta, key_path=key_path,
                                  signing_key=signing_key, source=input_graph)
    from graphrelease.release import ReleaseWriter

    extra: dict[str, Any] = {"task": task, "artifact_kind": "model"}
    if task == "link-prediction":
        run, _ = fit_link_model(input_graph, method, adjacency=adjacency, epsilon=epsilon, delta=delta,
                                accountant=accountant, options=options, progress=progress,
                        node_set=node_set, read_options=read_options)
        extra["link_split"] = (
            "held-out test edges (for the reported AUC only) are chosen by public per-pair coins "
            f"(test_frac={float((options or {}).get('test_frac', DEFAULT_TEST_FRAC))}); the model never read them"
        )
    else:
        if method in ("gap-link",):
            raise OptionError(f"--method {method} is a link-prediction model: use --task link-prediction")
        run = fit_model(input_graph, method, adjacency=adjacency, epsilon=epsilon, delta=delta,
                        accountant=accountant, options=options, progress=progress,
                        node_set=node_set, read_options=read_options, allow_uncertified=allow_uncertified)
    with ReleaseWriter(out_dir, force=force) as w:
        model_dir = w.path("model/config.json").parent
        written = run.model.save(model_dir)
        released = [f"model/{Path(p).name}" for p in written]
        # The task goes into the config so that `predict` knows how to run the model.
        cfg_path = model_dir / "config.json"
        cfg = json.loads(cfg_path.read_text())
        cfg["task"] = task
        cfg_path.write_text(json.dumps(cfg, indent=2, sort_keys=True))
        key, extra = _binding(run, extra, signer)
        cert = _finalize(w, _certificate_factory(run, mode="default", released=released, extra=extra),
                         allow_uncertified, signer)
    _write_key(key_file, key)
    return ReleaseReport(Path(out_dir), run.method, run.adjacency, float(epsilon), run.epsilon_spent, float(delta),
                         run.test_accuracy, guarantee_of(cert), released,
                         test_auc=run.test_auc if task == "link-prediction" else None, key_path=key_file)


def embed_release(
    input_graph: Graph | str | Path | None,
    out_dir: str | Path,
    *,
    method: str,
    adjacency: str = "edge",
    epsilon: float = 1.0,
    delta: float = 1e-5,
    accountant: str = "rdp",
    options: dict[str, Any] | None = None,
    force: bool = False,
    allow_uncertified: bool = False,
    progress: Callable[[], None] | None = None,
    node_set: str | None = None,
    read_options: dict[str, Any] | None = None,
    key_path: str | Path | None = None,
    signing_key: str | Path | None = None,
) -> ReleaseReport:
    """Fit ``method`` and release its DP node embeddings ``embeddings/embeddings.npz`` (array ``embeddings``, one row
    per node 0..n-1; no original ids) + certificate. Only methods whose embeddings are DP outputs are accepted."""
    from graphrelease.models import MODELS

    if method not in MODELS or not MODELS.get(method).releases_embeddings:
        raise OptionError(
            f"--method {method} does not produce DP embeddings; use gap (perturbed aggregates) or dpdgc (noisy Z)"
        )
    key_file, signer = _preflight(out_dir, force=force, epsilon=epsilon, delta=delta, key_path=key_path,
                                  signing_key=signing_key, source=input_graph)
    from graphrelease.release import ReleaseWriter

    run = fit_model(input_graph, method, adjacency=adjacency, epsilon=epsilon, delta=delta, accountant=accountant,
                    options=options, progress=progress, node_set=node_set, read_options=read_options,
                    allow_uncertified=allow_uncertified)
    emb = np.asarray(run.model.released_embeddings(), dtype=np.float32)
    with ReleaseWriter(out_dir, force=force) as w:
        path = w.path("embeddings/embeddings.npz")
        np.savez_compressed(path, embeddings=emb)
        released = ["embeddings/embeddings.npz"]
        key, extra = _binding(run, {"artifact_kind": "embeddings", "shape": list(emb.shape)}, signer)
        cert = _finalize(w, _certificate_factory(run, mode="default", released=released, extra=extra),
                         allow_uncertified, signer)
    _write_key(key_file, key)
    return ReleaseReport(Path(out_dir), method, run.adjacency, float(epsilon), run.epsilon_spent, float(delta),
                         run.test_accuracy, guarantee_of(cert), released, key_path=key_file)


def load_released_model(release_dir: str | Path):
    """The model object of a release written by :func:`train_model` (post-processing only)."""
    from graphrelease.models import MODELS

    model_dir = Path(release_dir) / "model"
    cfg_path = model_dir / "config.json"
    if not cfg_path.is_file():
        raise OptionError(f"'{release_dir}' is not a model release (no model/config.json); write one with `train`")
    config = json.loads(cfg_path.read_text())
    cls = MODELS.get(str(config.get("method")))
    return cls.load(model_dir, config)


def parse_pairs(text: str) -> np.ndarray:
    """Node pairs from CSV text ``u,v`` per line (an optional header line ``u,v`` or ``node_1,node_2``)."""
    rows = []
    for i, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.replace("\t", ",").split(",")]
        if len(parts) != 2:
            raise OptionError(f"pairs line {i}: expected 'u,v', got {line!r}")
        try:
            rows.append((int(parts[0]), int(parts[1])))
        except ValueError as err:
            if i == 1 and not rows:  # a header
                continue
            raise OptionError(f"pairs line {i}: node ids must be integers, got {line!r}") from err
    if not rows:
        raise OptionError("the pairs file holds no 'u,v' lines")
    return np.asarray(rows, dtype=np.int64)


def _predict_pairs(model, graph: Graph, pairs: str | Path | None, out: str | Path | None) -> PredictReport:
    if pairs is None:
        raise OptionError("this is a link-prediction release: pass --pairs FILE (CSV 'u,v' per line) to score pairs")
    try:
        text = Path(pairs).read_text()
    except OSError as err:
        raise OptionError(f"cannot read the pairs file '{pairs}': {err.strerror or err}") from err
    p = parse_pairs(text)
    scores = np.asarray(model.score_pairs(graph, p), dtype=np.float64)
    if type(model).pair_score == "logit":  # a probability reads without knowing the scorer: P(edge) = sigmoid(logit)
        scores = 1.0 / (1.0 + np.exp(-np.clip(scores, -60.0, 60.0)))
    out_path = None
    if out is not None:
        out_path = Path(out)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["u,v,score"] + [f"{u},{v},{s:.6g}" for (u, v), s in zip(p.tolist(), scores.tolist())]
        out_path.write_text("\n".join(lines) + "\n")
    return PredictReport(scores, None, 0, out_path, pairs=p)


def predict_release(
    release_dir: str | Path, input_graph: Graph | str | Path | None, *, out: str | Path | None = None,
    pairs: str | Path | None = None,
) -> PredictReport:
    """Run a released model on ``input_graph`` (the user's own data; no budget is spent and the output is not a
    release). Writes ``node,prediction`` CSV to ``out`` if given; accuracy is reported on nodes with labels.
    A link-prediction release scores the node pairs of the ``pairs`` CSV instead (``u,v,score`` to ``out``)."""
    model = load_released_model(release_dir)
    graph = load_input(input_graph)
    task = json.loads((Path(release_dir) / "model" / "config.json").read_text()).get("task")
    if task == "link-prediction":
        return _predict_pairs(model, graph, pairs, out)
    pred = np.asarray(model.predict(graph))
    acc, labelled = None, 0
    if graph.labels is not None:
        mask = np.asarray(graph.labels) >= 0
        labelled = int(mask.sum())
        if labelled:
            acc = float((pred[mask] == np.asarray(graph.labels)[mask]).mean())
    out_path = None
    if out is not None:
        out_path = Path(out)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        lines = ["node,prediction"] + [f"{i},{int(p)}" for i, p in enumerate(pred)]
        out_path.write_text("\n".join(lines) + "\n")
    return PredictReport(pred, acc, labelled, out_path)
