"""``graphrelease train`` / ``embed`` / ``predict``: private node models (rendering only; the work is
graphrelease.train)."""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from cli.common import NODE_SET_HELP, NODES_HELP, console, echo_json, parse_set_options, require_files

_EPS_HELP = (
    "Privacy budget epsilon (with --delta): no adversary can tell neighbouring inputs (see --adjacency) apart with "
    "likelihood ratio above e^epsilon, except with probability delta. 'inf' = non-private baseline."
)
_ADJ_HELP = "Privacy unit: edge | node | k-neighbor:K (what one neighbouring input changes)."
_SET_HELP = (
    "Model hyper-parameter KEY=VALUE (repeatable), e.g. --set epochs=50 --set hops=2 --set aggregation=similarity "
    "--set degree_cap=10 --set num_classes=7 (required under node adjacency)."
)


def _model_help() -> str:
    from graphrelease.models import MODELS

    return ", ".join(MODELS.names())


# Options train and embed share (declared once: typer reads these OptionInfo objects, it does not change them).
_NODES = typer.Option(None, "--nodes", help=NODES_HELP)
_NODE_SET = typer.Option("declared", "--node-set", help=NODE_SET_HELP)
_FORMAT = typer.Option(None, "--format", help="Input format (default: sniffed).")
_FEATURES = typer.Option(None, "--features", help="Node features file joined by node id.")
_LABELS = typer.Option(None, "--labels", help="Node labels file joined by node id.")
_KEY = typer.Option(None, "--key", help="Where to write the input-binding key (default <out>.key, outside the "
                                        "release).")
_SIGNING_KEY = typer.Option(None, "--signing-key", help="Your Ed25519 private key: signs the release's manifest.")
_SEED = typer.Option(None, "--seed", help="Reproducibility tests only: makes the release uncertified.")
_JSON = typer.Option(False, "--json", help="Print the result (or an error) as JSON.")


def _options(items: Optional[List[str]], seed: Optional[int]) -> dict:
    """``--set`` options plus ``--seed`` (one seed convention for every command: ``--seed``)."""
    from graphrelease.errors import OptionError

    opts = parse_set_options(items)
    if "seed" in opts:
        raise OptionError("pass the seed as --seed N (as for synth), not --set seed=N")
    if seed is not None:
        opts["seed"] = seed
    return opts


def _render(report, what: str, as_json: bool = False) -> None:
    if as_json:
        echo_json(dict(report.__dict__))
        return
    console.print(f"[bold]{what}[/] written to {report.out_dir}")
    console.print(f"  method {report.method}, adjacency {report.adjacency}")
    console.print(
        f"  epsilon spent {report.epsilon_spent:.4g} of {report.epsilon:g} at delta {report.delta:g} "
        f"(guarantee: {report.guarantee})"
    )
    if getattr(report, "test_auc", None) is not None:
        console.print(f"  test AUC (held-out real edges vs as many sampled non-edges; not released): "
                      f"{report.test_auc:.4f}")
    else:
        console.print(f"  test accuracy (held-out labelled nodes, fraction correct): {report.test_accuracy:.4f}")
    for a in report.artifacts:
        console.print(f"  artifact {a}")
    if report.key_path is not None:
        console.print(f"  input-binding key: {report.key_path} (keep it private, outside the release)")


def _steps(quiet: bool, message: str):
    """A live line: training steps done, epsilon spent so far, elapsed time (nothing with --json)."""
    import contextlib

    @contextlib.contextmanager
    def live():
        if quiet:
            yield None
            return
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}[/] step {task.completed:,}"),
                      TextColumn("epsilon spent {task.fields[eps]}"), TimeElapsedColumn(), console=console,
                      transient=True) as bar:
            task = bar.add_task(message, total=None, eps="-")

            def update(steps: int, eps: float) -> None:
                bar.update(task, completed=steps, eps=f"{eps:.3f}")

            yield update

    return live()


def _read_options(nodes, input_format, features, labels) -> dict:
    return {"nodes": nodes, "input_format": input_format, "features": features, "labels": labels}


def register(app: typer.Typer) -> None:
    @app.command("train")
    def train(
        input: Path = typer.Argument(..., help="Input graph file (npz, edge list, GraphML, ...)."),
        out: Path = typer.Option(..., "--out", help="Release directory to write."),
        method: str = typer.Option("gap", "--method", help="Model: dp-mlp, gap, dpdgc, or baselines mlp/gcn/sage; "
                                   "with --task link-prediction: gap or relational."),
        task: str = typer.Option("node-classification", "--task", help="node-classification | link-prediction "
                                 "(edge adjacency for gap; --set test_frac=0.1 holds out edges for the test AUC)."),
        adjacency: str = typer.Option("edge", "--adjacency", help=_ADJ_HELP),
        epsilon: float = typer.Option(..., "--epsilon", help=_EPS_HELP),
        delta: float = typer.Option(1e-5, "--delta", help="Privacy parameter delta."),
        accountant: str = typer.Option("rdp", "--accountant", help="rdp | pld (pld is tighter, much slower)."),
        options: Optional[List[str]] = typer.Option(None, "--set", help=_SET_HELP),
        force: bool = typer.Option(False, "--force", help="Replace an existing release directory."),
        allow_uncertified: bool = typer.Option(False, "--allow-uncertified", help="Write even without a proof."),
        nodes: Optional[str] = _NODES,
        node_set: str = _NODE_SET,
        input_format: Optional[str] = _FORMAT,
        features: Optional[Path] = _FEATURES,
        labels: Optional[Path] = _LABELS,
        key: Optional[Path] = _KEY,
        signing_key: Optional[Path] = _SIGNING_KEY,
        seed: Optional[int] = _SEED,
        as_json: bool = _JSON,
    ) -> None:
        """Train a private node or link model and release its weights with a privacy certificate."""
        from graphrelease.defaults import check_delta, check_epsilon

        check_epsilon(epsilon, allow_inf=True), check_delta(delta)  # one-line answer before the heavy imports
        require_files(input=input, features=features, labels=labels)
        from graphrelease.train import train_model

        with _steps(as_json, f"training {method} ({adjacency}, epsilon {epsilon:g})") as progress:
            report = train_model(
                input, out, method=method, task=task, adjacency=adjacency, epsilon=epsilon, delta=delta,
                accountant=accountant, options=_options(options, seed), force=force,
                allow_uncertified=allow_uncertified, node_set=node_set,
                read_options=_read_options(nodes, input_format, features, labels), key_path=key,
                signing_key=signing_key, progress=progress,
            )
        _render(report, "model release", as_json)

    @app.command("embed")
    def embed(
        input: Path = typer.Argument(..., help="Input graph file."),
        out: Path = typer.Option(..., "--out", help="Release directory to write."),
        method: str = typer.Option("gap", "--method", help="gap | dpdgc (methods whose embeddings are DP)."),
        adjacency: str = typer.Option("edge", "--adjacency", help=_ADJ_HELP),
        epsilon: float = typer.Option(..., "--epsilon", help=_EPS_HELP),
        delta: float = typer.Option(1e-5, "--delta", help="Privacy parameter delta."),
        accountant: str = typer.Option("rdp", "--accountant", help="rdp | pld."),
        options: Optional[List[str]] = typer.Option(None, "--set", help=_SET_HELP),
        force: bool = typer.Option(False, "--force", help="Replace an existing release directory."),
        allow_uncertified: bool = typer.Option(False, "--allow-uncertified", help="Write even without a proof."),
        nodes: Optional[str] = _NODES,
        node_set: str = _NODE_SET,
        input_format: Optional[str] = _FORMAT,
        features: Optional[Path] = _FEATURES,
        labels: Optional[Path] = _LABELS,
        key: Optional[Path] = _KEY,
        signing_key: Optional[Path] = _SIGNING_KEY,
        seed: Optional[int] = _SEED,
        as_json: bool = _JSON,
    ) -> None:
        """Release DP node embeddings (npz, nodes numbered 0..n-1) with a privacy certificate."""
        from graphrelease.defaults import check_delta, check_epsilon

        check_epsilon(epsilon, allow_inf=True), check_delta(delta)  # one-line answer before the heavy imports
        require_files(input=input, features=features, labels=labels)
        from graphrelease.train import embed_release

        with _steps(as_json, f"fitting {method} for embeddings (epsilon {epsilon:g})") as progress:
            report = embed_release(
                input, out, method=method, adjacency=adjacency, epsilon=epsilon, delta=delta, accountant=accountant,
                options=_options(options, seed), force=force, allow_uncertified=allow_uncertified,
                node_set=node_set, read_options=_read_options(nodes, input_format, features, labels), key_path=key,
                signing_key=signing_key, progress=progress,
            )
        _render(report, "embedding release", as_json)

    @app.command("predict")
    def predict(
        release: Path = typer.Argument(..., help="A model release written by `graphrelease train`."),
        input: Path = typer.Argument(..., help="Graph to run the released model on (your own data; no budget)."),
        out: Optional[Path] = typer.Option(None, "--out", help="CSV to write: node,prediction; for a link release "
                                           "u,v,score with score = P(edge) in [0, 1] for gap, the cosine of the "
                                           "two embeddings in [-1, 1] for relational."),
        pairs: Optional[Path] = typer.Option(None, "--pairs",
                                             help="Link-prediction release: CSV of u,v pairs to score."),
    ) -> None:
        """Run a released model on new data (post-processing: spends no budget; the output is not a release)."""
        require_files(input=input, pairs=pairs)
        from graphrelease.train import predict_release

        report = predict_release(release, input, out=out, pairs=pairs)
        console.print(f"scored {len(report.predictions)} pairs" if report.pairs is not None
                      else f"predicted {len(report.predictions)} nodes")
        if report.accuracy is not None:
            console.print(f"accuracy on the {report.labelled} labelled nodes (fraction correct): {report.accuracy:.4f}")
        if report.out_path is not None:
            console.print(f"predictions written to {report.out_path}")
