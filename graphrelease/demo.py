"""The main job on the embedded default graph: a DP synthetic release of Cora, then its internal audit.

``make demo`` runs this through ``graphrelease demo``. It is the whole product in one call: read the input, fit the
default generator under an edge-DP budget, write the release bundle (graphs + model + certificate + manifest, the
input-binding key beside it), verify the certificate independently, and audit the release against the input.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

DEMO_EPSILON = 2.0
DEMO_DIR = Path("out/demo")


@dataclass
class DemoResult:
    synth: Any  # graphrelease.synth.SynthResult
    verify: Any  # graphrelease.privacy.certificate.VerifyReport
    audit: Any  # graphrelease.audit.run.AuditResult
    report_files: list[Path]


def run_demo(
    workdir: str | Path = DEMO_DIR,
    *,
    epsilon: float = DEMO_EPSILON,
    method: str | None = None,
    synth_progress: Callable[..., None] | None = None,
    audit_progress: Callable[..., None] | None = None,
) -> DemoResult:
    """Release a DP synthetic version of the embedded Cora graph into ``workdir/release`` and audit it.

    The release replaces an earlier demo release; the INTERNAL audit report goes to ``workdir/audit.html``
    (+ ``.md``, ``.json``), outside the release.
    """
    from graphrelease.audit.run import run_audit
    from graphrelease.io import load_default_graph
    from graphrelease.privacy.certificate import verify_release
    from graphrelease.report import write_report
    from graphrelease.synth import synthesize

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    graph = load_default_graph()
    release_dir = workdir / "release"
    key_path = workdir / "release.key"
    synth = synthesize(graph, method=method, epsilon=epsilon, out=release_dir, force=True, key_path=key_path,
                       progress=synth_progress)
    verify = verify_release(release_dir, input_graph=graph, key=key_path)
    audit = run_audit(graph, [release_dir], tasks=("statistics", "motifs", "downstream"),
                      attacks=("link_inference", "membership"), fast=True, progress=audit_progress)
    files = write_report(audit, workdir / "audit.html", release_dirs=[release_dir])
    return DemoResult(synth, verify, audit, files)
