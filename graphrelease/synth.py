"""``synthesize``: input graph(s) -> a certified release of synthetic graphs; ``sample_release``: more graphs from a
release without the input (post-processing).

Works with every generator registered in :data:`graphrelease.generators.GENERATORS`, through the interface of
:mod:`graphrelease.generators.base` only.

Release layout (``out``)::

    graphs/graph_000.csv ...     synthetic graphs (nodes 0..n-1; no original ids)
    model/                       the fitted generator's released parameters (decoder weights + config for GVAE/GGAN)
    model/generator.json         which generator / fitted class to load for ``sample_release``
    certificate.json, manifest.json

The input-binding key (HMAC-SHA256 over the input) is written BESIDE the release (``<out>.key``, mode 0600) and
never inside it; keep it with the data owner.

Default delta: ``min(1e-5, 1 / n^1.1)`` with ``n`` the number of nodes (public under edge adjacency); ``1e-5`` for a
collection.

Example
-------
>>> from graphrelease.synth import synthesize                                  # doctest: +SKIP
>>> r = synthesize("cora.npz", method="dpgvae", epsilon=4.0, out="release")    # doctest: +SKIP
>>> r.guarantee, round(r.epsilon_spent, 2)                                     # doctest: +SKIP
('proved', 3.9)
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphrelease.errors import OptionError, ReleaseError, UncertifiedError
from graphrelease.graph import Graph, GraphCollection
from graphrelease.release import GENERATOR_FILE

#: Method used for one input graph when ``method`` is not given (the lead sets it from reports/synth_benchmark.md).
DEFAULT_SINGLE_GRAPH_METHOD = "dp_bter"
#: Method used for a collection when ``method`` is not given.
DEFAULT_COLLECTION_METHOD = "dpgvae"

#: ``progress(stage, done, total, epsilon_spent)``; stages: "fit", "sample", "write".
ProgressFn = Callable[[str, int, int, float], None]


@dataclass(frozen=True)
class SynthResult:
    """What :func:`synthesize` / :func:`sample_release` wrote."""

    release_dir: Path
    method: str
    mode: str | None
    epsilon: float
    delta: float
    epsilon_spent: float
    guarantee: str
    num_graphs: int
    key_path: Path | None
    seconds: float
    certificate: dict = field(repr=False, default_factory=dict)
    #: The fitted generator's plain-words notes on its released values (``FittedGenerator.release_notes``).
    notes: list[str] = field(default_factory=list)


def default_delta(data: Graph | GraphCollection) -> float:
    """``min(1e-5, 1/n^1.1)`` for one graph (``n`` nodes, public under edge adjacency); ``1e-5`` for collections."""
    if isinstance(data, Graph):
        return float(min(1e-5, 1.0 / data.num_nodes ** 1.1))
    return 1e-5


def _load(input_path_or_data: Any, **read_options: Any) -> Graph | GraphCollection:
    read_options = {k: v for k, v in read_options.items() if v is not None}
    if isinstance(input_path_or_data, (Graph, GraphCollection)):
        if read_options:
            raise OptionError(f"{', '.join(sorted(read_options))} apply to an input file, not to a Graph object")
        return input_path_or_data
    from graphrelease.io import read_graph

    fmt = read_options.pop("fmt", None)
    return read_graph(input_path_or_data, fmt, **read_options).data


def _accepts(cls: type, name: str) -> bool:
    try:
        params = inspect.signature(cls.__init__).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _generator_kwargs(cls: type, mode: str | None, seed: int | None, options: dict[str, Any] | None) -> dict:
    kwargs: dict[str, Any] = dict(options or {})
    if "seed" in kwargs:
        # A seed hidden in the options would make the noise reproducible behind the certificate's back.
        raise OptionError("'seed' is not a method option; pass seed= (reproducibility tests only: the certificate "
                          "then says reproducible_seed_used and guarantee: none)")
    if mode is not None:
        if not _accepts(cls, "mode"):
            raise OptionError(f"--mode: method '{cls.name}' has no modes; drop --mode")
        kwargs["mode"] = mode
    if seed is not None and _accepts(cls, "seed"):
        kwargs["seed"] = seed
    for key in kwargs:
        if not _accepts(cls, key):
            raise OptionError(f"method '{cls.name}' has no option '{key}'")
    return kwargs


def synthesize(
    input_path_or_data: Any,
    *,
    method: str | None = None,
    epsilon: float,
    delta: float | None = None,
    num_graphs: int = 1,
    out: str | Path,
    mode: str | None = None,
    adjacency: str | None = None,
    allow_uncertified: bool = False,
    force: bool = False,
    key_path: str | Path | None = None,
    seed: int | None = None,
    progress: ProgressFn | None = None,
    accountant: str = "rdp",
    num_nodes: int | None = None,
    graph_format: str = "csv",
    options: dict[str, Any] | None = None,
    node_set: str | None = None,
    nodes: int | str | Path | None = None,
    input_format: str | None = None,
    features: str | Path | None = None,
    labels: str | Path | None = None,
    signing_key: str | Path | None = None,
) -> SynthResult:
    """Fit ``method`` under ``(epsilon, delta)`` and write a release of ``num_graphs`` synthetic graphs to ``out``.

    Parameters
    ----------
    input_path_or_data:
        A path readable by :func:`graphrelease.io.read_graph` (a graph file or a TU collection directory), or a
        :class:`Graph` / :class:`GraphCollection`.
    method:
        A registered generator (``graphrelease methods``); default :data:`DEFAULT_SINGLE_GRAPH_METHOD` for one
        graph and :data:`DEFAULT_COLLECTION_METHOD` for a collection.
    epsilon, delta:
        The total budget; the run never spends more. ``delta=None``: see :func:`default_delta`.
    num_graphs:
        Synthetic graphs to draw (post-processing; no extra cost).
    mode:
        Generator mode (``dpgvae``/``dpggan``: ``paper``, ``edge-tuples``, ``buckets``, ``graphs``, ``measured``, ``auto``).
    adjacency:
        Privacy unit: ``edge`` (default) or ``graph`` (collections).
    allow_uncertified:
        Required for releases whose certificate says ``guarantee: none`` (non-private baselines, ``mode=paper``,
        a fixed ``seed``).
    key_path:
        Where to write the input-binding HMAC key (default ``<out>.key`` beside the release). Never inside it.
    seed:
        Fixes all randomness (reproducibility tests only): the certificate then says ``reproducible_seed_used``
        and ``guarantee: none``.
    progress:
        ``progress(stage, done, total, epsilon_spent)`` callback (the CLI draws a progress bar from it).
    accountant:
        ``"rdp"`` (default) or ``"pld"``. Deep generators calibrate with RDP either way; with ``"pld"`` the
        certificate reports the (smaller) PLD epsilon, but every budget charge runs a PLD capacity search, which
        costs tens of seconds per ledger entry on this class of machine.
    num_nodes:
        Node count of the generated graphs (default: as the fitted model says).
    node_set:
        ``"declared"`` (default): refuse an input whose node set was read off its edges (an edge list without a
        node declaration); ``"from-edges"``: accept it, and the certificate discloses that the non-isolated nodes
        were treated as public (:mod:`graphrelease.privacy.public_inputs`).
    nodes, input_format, features, labels:
        Reading options for a path input (:func:`graphrelease.io.read_graph`): the owner's node set (a count or a
        node-list file), the format, and node feature / label files joined by id.
    signing_key:
        The owner's Ed25519 private key (PEM): the manifest is signed and the certificate names the public key
        (:mod:`graphrelease.privacy.signing`).

    Raises
    ------
    BudgetError
        the budget cannot be met (the message gives the smallest feasible epsilon for the schedule).
    UncertifiedError
        the release would be uncertified and ``allow_uncertified`` is False.
    """
    from graphrelease.defaults import check_delta, check_epsilon
    from graphrelease.privacy.public_inputs import check_policy, node_set_assumption

    # Everything a user can get wrong in the options is checked before the heavy imports and before reading.
    start = time.perf_counter()
    if int(num_graphs) < 1:
        raise OptionError(f"--graphs must be >= 1, got {num_graphs}")
    epsilon = check_epsilon(epsilon, allow_inf=True)
    delta = check_delta(delta)
    node_set = check_policy(node_set)
    from graphrelease.release import plan_key_path, plan_out_path

    out = plan_out_path(out, force=force)
    key_file = plan_key_path(out, key_path, force=force)

    from graphrelease.generators import GENERATORS
    from graphrelease.privacy.budget import Budget
    from graphrelease.privacy.noise import secure_generator

    signer = None
    if signing_key is not None:
        from graphrelease.privacy.signing import load_private_key

        signer = load_private_key(signing_key)
    data = _load(input_path_or_data, nodes=nodes, fmt=input_format, features=features, labels=labels)
    is_coll = isinstance(data, GraphCollection)
    method = method or (DEFAULT_COLLECTION_METHOD if is_coll else DEFAULT_SINGLE_GRAPH_METHOD)
    cls = GENERATORS.get(method)
    kind = "collection" if is_coll else "graph"
    if kind not in cls.inputs:
        raise OptionError(f"method '{method}' takes {' or '.join(sorted(cls.inputs))} input, not a {kind}; "
                          f"choose another --method (see `graphrelease methods`)")
    adjacency = (adjacency or "edge").lower()
    from graphrelease.privacy.adjacency import Adjacency

    adj = Adjacency.parse(adjacency)
    if adj.kind.value not in cls.adjacencies:
        raise OptionError(f"method '{method}' certifies {', '.join(sorted(cls.adjacencies))} adjacency, not "
                          f"'{adjacency}'; pass --adjacency {sorted(cls.adjacencies)[0]}")
    if adj.kind.value == "graph" and not is_coll:
        raise OptionError("--adjacency graph needs a collection of graphs; use --adjacency edge for one graph")
    node_public = node_set_assumption(data, adjacency=adj.kind.value, policy=node_set,
                                      source=None if isinstance(input_path_or_data, (Graph, GraphCollection))
                                      else str(input_path_or_data))
    delta = default_delta(data) if delta is None else delta
    uncertified_reasons = []
    if cls.non_private:
        uncertified_reasons.append(f"method '{method}' is a non-private baseline")
    if mode is not None and str(mode).lower() == "paper":
        uncertified_reasons.append("mode=paper reproduces an algorithm that is not differentially private")
    if seed is not None:
        uncertified_reasons.append("a fixed seed makes the noise reproducible")
    if uncertified_reasons and not allow_uncertified:
        raise UncertifiedError(f"the release would have guarantee: none ({'; '.join(uncertified_reasons)}); "
                               "pass --allow-uncertified to proceed anyway")

    budget = Budget.unlimited(adj, delta=delta) if cls.non_private else Budget(
        epsilon=epsilon, delta=delta, adjacency=adj, accountant=accountant)
    kwargs = _generator_kwargs(cls, mode, seed, options)
    generator = cls(**kwargs)
    # Every option the release was made with, for `sample`, `audit` and a reader (the seed is never released).
    released_options = {k: v for k, v in kwargs.items() if k not in ("seed", "mode")}

    spent = [0.0]
    if progress is not None and not cls.non_private:
        def _on_record(ledger) -> None:
            spent[0] = budget.spent_epsilon()
        budget.ledger.add_listener(_on_record)

    def fit_progress(*args: Any) -> None:
        if progress is not None and len(args) >= 2:
            progress("fit", int(args[0]), int(args[1]), spent[0])

    fitted = generator.fit(data, budget, progress=fit_progress)
    if not budget.ledger.sound and not allow_uncertified:
        raise UncertifiedError("the fitted generator recorded mechanisms without a proof ("
                               + "; ".join(budget.ledger.unsound_reasons()) + "); pass --allow-uncertified")
    # Belt and braces: a generator that seeded itself says so, and the release is then uncertified.
    seeded = seed is not None or bool(getattr(fitted, "reproducible_seed_used", False))
    if seeded and not allow_uncertified:
        raise UncertifiedError("the generator ran with a fixed seed, so the release would have guarantee: none; "
                               "pass --allow-uncertified to proceed anyway")
    np_rng, _, used_seed = secure_generator(None if seed is None else seed + 1)
    graphs: list[Graph] = []
    for i in range(int(num_graphs)):
        graphs.extend(fitted.sample(1, num_nodes=num_nodes, rng=np_rng))
        if progress is not None:
            progress("sample", i + 1, int(num_graphs), spent[0])
    mode_used = getattr(generator, "last_info", {}).get("mode", mode)
    from graphrelease.defaults import warn_if_beside_input

    warn_if_beside_input(input_path_or_data, out, key_file)
    cert = _write_release(out, force=force, graphs=graphs, fitted=fitted, generator=generator, method=method,
                          mode=mode_used, budget=budget, data=data, key_file=key_file, used_seed=seeded,
                          graph_format=graph_format, extra_public=node_public, signer=signer,
                          options=released_options)
    if progress is not None:
        progress("write", 1, 1, spent[0])
    spent_eps = 0.0 if cls.non_private or not budget.ledger.entries else budget.spent_epsilon()
    return SynthResult(release_dir=out, method=method, mode=mode_used, epsilon=epsilon, delta=delta,
                       epsilon_spent=spent_eps, guarantee=str(cert.get("guarantee", "none")),
                       num_graphs=len(graphs), key_path=key_file, seconds=time.perf_counter() - start,
                       certificate=cert, notes=list(fitted.release_notes()))


def _fitted_ref(fitted: Any) -> str:
    cls = type(fitted)
    return f"{cls.__module__}:{cls.__qualname__}"


def _write_graphs(w, graphs: list[Graph], graph_format: str) -> list[str]:
    ext = {"csv": "csv", "npz": "npz", "graphml": "graphml"}.get(graph_format)
    if ext is None:
        raise OptionError(f"graph format '{graph_format}' is not one of csv, npz, graphml")
    names = []
    for i, g in enumerate(graphs):
        rel = f"graphs/graph_{i:03d}.{ext}"
        w.write_graph(rel, g.without_private_metadata() if hasattr(g, "without_private_metadata") else g,
                      fmt=graph_format)
        names.append(rel)
    return names


def _write_release(out: Path, *, force: bool, graphs: list[Graph], fitted: Any, generator: Any, method: str,
                   mode: str | None, budget: Any, data: Graph | GraphCollection, key_file: Path, used_seed: bool,
                   graph_format: str, extra_public: dict | None, signer: Any = None,
                   options: dict[str, Any] | None = None) -> dict:
    from graphrelease.privacy.binding import generate_key, input_hmac, write_key
    from graphrelease.privacy.certificate import build_certificate
    from graphrelease.privacy.signing import sign_bytes, signature_statement
    from graphrelease.release import ReleaseWriter

    holder: dict[str, dict] = {}
    with ReleaseWriter(out, force=force) as w:
        graph_files = _write_graphs(w, graphs, graph_format)
        model_dir = w.path(GENERATOR_FILE).parent
        model_files = [p.relative_to(w.staging_dir).as_posix() for p in fitted.save(model_dir)]
        w.write_json(GENERATOR_FILE, {"method": method, "mode": mode, "fitted_class": _fitted_ref(fitted),
                                      "options": dict(options or {})})
        released = [*graph_files, *model_files, GENERATOR_FILE]
        # The key reaches the disk only with a finished release: a failed or interrupted run leaves no stray key.
        key = generate_key()
        binding = input_hmac(data, key)
        from graphrelease.privacy.public_inputs import qualify_public_assumptions

        public = qualify_public_assumptions(dict(getattr(fitted, "public_assumptions", {}) or {}), extra_public or {},
                                            inferred=data.node_set_inferred)

        def factory(artifacts: dict[str, str]) -> dict:
            cert = build_certificate(budget=budget, method=method, mode=mode or "default", artifacts=artifacts,
                                     public_assumptions=public, released=released,
                                     reproducible_seed_used=used_seed,
                                     extra={"input_hmac_sha256": binding,
                                            "input_binding": "HMAC-SHA256 of the input under a key kept by the "
                                                             "data owner outside this release",
                                            "num_graphs": len(graphs),
                                            "node_set_declared": not data.node_set_inferred,
                                            "signature": signature_statement(signer)})
            holder["cert"] = cert
            return cert

        w.finalize(factory, signer=None if signer is None else (lambda message: sign_bytes(signer, message)))
    write_key(key_file, key)
    return holder["cert"]


def sample_release(release_dir: str | Path, num_graphs: int, out: str | Path, *, force: bool = False,
                   num_nodes: int | None = None, graph_format: str = "csv", seed: int | None = None,
                   progress: ProgressFn | None = None) -> SynthResult:
    """Draw ``num_graphs`` more graphs from a release's model, without the input (post-processing: no budget).

    The new release copies the model and carries the original certificate over, with its artifact hashes replaced
    by the new ones and a ``post_processing`` section naming the source release's certificate hash.
    """
    from graphrelease.privacy.noise import secure_generator
    from graphrelease.release import CERTIFICATE, ReleaseWriter, read_release, sha256_file

    start = time.perf_counter()
    src = Path(release_dir)
    out = Path(out)
    if int(num_graphs) < 1:
        raise OptionError(f"--graphs must be >= 1, got {num_graphs}")
    if out.resolve() == src.resolve():
        raise OptionError("--out must differ from the source release")
    if out.exists() and not force:
        raise ReleaseError(f"{out} already exists; choose another --out or pass --force to replace it")
    original = read_release(src)["certificate"]
    from graphrelease.release import load_fitted

    ref, fitted = load_fitted(src)
    np_rng, _, used_seed = secure_generator(seed)
    graphs: list[Graph] = []
    for i in range(int(num_graphs)):
        graphs.extend(fitted.sample(1, num_nodes=num_nodes, rng=np_rng))
        if progress is not None:
            progress("sample", i + 1, int(num_graphs), float("nan"))
    source_hash = sha256_file(src / CERTIFICATE)
    holder: dict[str, dict] = {}
    with ReleaseWriter(out, force=force) as w:
        graph_files = _write_graphs(w, graphs, graph_format)
        model_dir = w.path(GENERATOR_FILE).parent
        model_files = [p.relative_to(w.staging_dir).as_posix() for p in fitted.save(model_dir)]
        w.write_json(GENERATOR_FILE, ref)

        def factory(artifacts: dict[str, str]) -> dict:
            cert = json.loads(json.dumps(original))
            cert["artifacts"] = artifacts
            cert["released"] = [*graph_files, *model_files, GENERATOR_FILE]
            post = {
                "source_certificate_sha256": source_hash,
                "note": "graphs drawn from the released model without reading the input; post-processing of a "
                        "DP release costs no privacy budget",
                "num_graphs": len(graphs),
            }
            if used_seed:  # sampling randomness only: the DP noise of the source release is unaffected
                post["fixed_sampling_randomness"] = True
            extra = dict(cert.get("extra") or {})
            extra["num_graphs"] = len(graphs)
            extra["post_processing"] = post
            # The source's signature covered the source's manifest; this new manifest is not signed.
            extra["signature"] = {"signed": False}
            cert["extra"] = extra
            holder["cert"] = cert
            return cert

        w.finalize(factory)
    cert = holder["cert"]
    budget_info = cert.get("budget", {}) if isinstance(cert.get("budget"), dict) else {}
    return SynthResult(release_dir=out, method=str(ref.get("method")), mode=ref.get("mode"),
                       epsilon=float(cert.get("epsilon", budget_info.get("epsilon", float("nan"))) or float("nan")),
                       delta=float(cert.get("delta", budget_info.get("delta", float("nan"))) or float("nan")),
                       epsilon_spent=0.0, guarantee=str(cert.get("guarantee", "none")), num_graphs=len(graphs),
                       key_path=None, seconds=time.perf_counter() - start, certificate=cert)
