"""``graphrelease synth`` and ``graphrelease sample``: thin shells over :mod:`graphrelease.synth`."""

from __future__ import annotations

import math
from pathlib import Path
from typing import List, Optional

import typer

from cli.common import NODE_SET_HELP, NODES_HELP, console, echo_json, parse_set_options, require_files


def _progress_bar():
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("eps spent {task.fields[eps]}"), TimeElapsedColumn(), console=console,
                    transient=False)


def _callback(bar):
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int, eps: float) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=total, eps="-")
        shown = "-" if eps is None or math.isnan(eps) else f"{eps:.3f}"
        bar.update(tasks[stage], completed=done, total=total, eps=shown)

    return update


def _summary(result) -> None:
    console.print(f"release written to [bold]{result.release_dir}[/] ({result.num_graphs} graph(s), "
                  f"{result.seconds:.1f}s)")
    console.print(f"method {result.method} (mode {result.mode or 'default'}); guarantee: [bold]{result.certificate.get('guarantee')}"
                  f"[/]; epsilon spent {result.epsilon_spent:.4g} of {result.epsilon:g} at delta {result.delta:.3g} "
                  "(epsilon: privacy loss bound under the certificate's adjacency; smaller is more private)")
    if result.key_path is not None:
        console.print(f"input-binding key: {result.key_path} (keep it private, outside the release)")
    for note in result.notes:
        console.print(f"note: {note}", highlight=False)


def synth(
    input: Path = typer.Argument(..., help="Input graph file or TU collection directory."),
    out: Path = typer.Option(..., "--out", help="Release directory to create."),
    epsilon: float = typer.Option(..., "--epsilon", help="Total privacy budget epsilon (> 0)."),
    method: Optional[str] = typer.Option(None, "--method", help="Generator (default: dp_bter for one graph, "
                                                                "dpgvae for a collection)."),
    delta: Optional[float] = typer.Option(None, "--delta", help="delta (default min(1e-5, 1/n^1.1))."),
    graphs: int = typer.Option(1, "--graphs", help="Number of synthetic graphs to release."),
    mode: Optional[str] = typer.Option(None, "--mode", help="Generator mode (dpgvae/dpggan: auto, edge-tuples, "
                                                            "buckets, graphs, paper)."),
    adjacency: Optional[str] = typer.Option(None, "--adjacency", help="Privacy unit: edge (default) or graph."),
    allow_uncertified: bool = typer.Option(False, "--allow-uncertified",
                                           help="Allow a release whose certificate says guarantee: none."),
    force: bool = typer.Option(False, "--force", help="Replace an existing release directory."),
    key: Optional[Path] = typer.Option(None, "--key", help="Where to write the input-binding key (default "
                                                           "<out>.key, outside the release)."),
    nodes: Optional[str] = typer.Option(None, "--nodes", help=NODES_HELP),
    node_set: str = typer.Option("declared", "--node-set", help=NODE_SET_HELP),
    input_format: Optional[str] = typer.Option(None, "--format", help="Input format (default: sniffed); "
                                               "see `graphrelease inspect --help`."),
    features: Optional[Path] = typer.Option(None, "--features", help="Node features file (CSV/npz/npy) joined "
                                            "by node id."),
    labels: Optional[Path] = typer.Option(None, "--labels", help="Node labels file (CSV/npz/npy) joined by node id."),
    num_nodes: Optional[int] = typer.Option(None, "--num-nodes", help="Node count of the generated graphs "
                                            "(default: the input's)."),
    accountant: str = typer.Option("rdp", "--accountant", help="rdp (default, fast) or pld (tighter, slower)."),
    fmt: str = typer.Option("csv", "--graph-format", help="Graph file format in the release: csv, npz, graphml."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Reproducibility tests only: makes the release "
                                                            "uncertified."),
    options: Optional[List[str]] = typer.Option(None, "--set", help="Generator option KEY=VALUE (repeatable), "
                                                "e.g. --set partition=degree_classes for dp_dcsbm."),
    signing_key: Optional[Path] = typer.Option(None, "--signing-key", help="Your Ed25519 private key (from "
                                               "`graphrelease certificate keygen`): signs the release's manifest."),
    as_json: bool = typer.Option(False, "--json", help="Print the result (or an error) as JSON, no progress bar."),
) -> None:
    """Fit a DP generator and write a certified release of synthetic graphs."""
    from graphrelease.defaults import check_delta, check_epsilon

    check_epsilon(epsilon, allow_inf=True), check_delta(delta)  # one-line answer before the heavy imports
    require_files(input=input, features=features, labels=labels)
    from graphrelease.synth import synthesize

    kwargs = dict(method=method, epsilon=epsilon, delta=delta, num_graphs=graphs, out=out,
                  mode=mode, adjacency=adjacency, allow_uncertified=allow_uncertified, force=force,
                  key_path=key, seed=seed, accountant=accountant,
                  num_nodes=num_nodes, graph_format=fmt, options=parse_set_options(options) or None,
                  node_set=node_set, nodes=nodes, input_format=input_format, features=features,
                  labels=labels, signing_key=signing_key)
    if as_json:
        result = synthesize(input, **kwargs)
        echo_json({k: v for k, v in result.__dict__.items() if k != "certificate"})
        return
    with _progress_bar() as bar:
        result = synthesize(input, progress=_callback(bar), **kwargs)
    _summary(result)


def sample(
    release: Path = typer.Argument(..., help="An existing release directory (from `synth`)."),
    out: Path = typer.Option(..., "--out", help="New release directory."),
    graphs: int = typer.Option(1, "--graphs", help="Number of graphs to draw."),
    nodes: Optional[int] = typer.Option(None, "--num-nodes", "--nodes", help="Node count of generated graphs."),
    force: bool = typer.Option(False, "--force", help="Replace an existing output directory."),
    fmt: str = typer.Option("csv", "--graph-format", help="Graph file format in the new release: csv, npz, graphml."),
) -> None:
    """Draw more graphs from a release without the input (post-processing: no privacy cost)."""
    from graphrelease.synth import sample_release

    with _progress_bar() as bar:
        result = sample_release(release, graphs, out, force=force, num_nodes=nodes, graph_format=fmt,
                                progress=_callback(bar))
    console.print(f"release written to [bold]{result.release_dir}[/] ({result.num_graphs} graph(s)); "
                  f"post-processing of {release}: no privacy budget spent; guarantee: "
                  f"{result.certificate.get('guarantee')}")


def register(app: typer.Typer) -> None:
    app.command("synth")(synth)
    app.command("sample")(sample)
