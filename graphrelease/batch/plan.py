"""Batch plans: a TOML file that lists private inputs, methods and budgets, expanded into independent jobs.

Example plan::

    name = "imdb-anonymisation"
    output = "out/imdb"            # releases go here, one directory per job (relative to the plan file)
    delta = 1e-5                   # default delta of each job
    graphs_per_job = 1

    [audit]
    enabled = true                 # compare each release with its input (internal numbers, written to the summary)

    [[inputs]]
    name = "imdb"
    path = "../shared/data/collections/IMDB-MULTI"
    members = "0:100"              # collections: each member graph is its own private input ("all", "A:B" or a list)
    sharing = "compose"            # how jobs on the same private graph share its budget (see below)
    epsilon_cap = 10.0             # per-input cap on the composed epsilon of all its jobs
    delta_cap = 1e-4
    # nodes = "nodes.csv"          # an edge-list input's node set (a count or a node-list file, as --nodes);
    # node_set = "from-edges"      # or accept the node set read off the edges (disclosed in each certificate)

    [[runs]]
    inputs = ["imdb"]              # optional; default: every input
    methods = ["privgraph", "dpgvae"]
    epsilons = [0.5, 1.0, 2.0]
    [runs.options.dpgvae]          # method options passed to synthesize
    mode = "sound"

Budget sharing (one private graph, several jobs). Releases from the same graph compose; the plan must say how:

``compose``  each job spends the epsilon it lists; the plan is refused unless the basic-composition total
             (sum of epsilons, sum of deltas) stays within ``epsilon_cap``/``delta_cap``. After the run the
             summary also reports the accountant's composition of all the jobs' ledgers (never larger than the sum).
``split``    ``epsilon_total`` (and ``delta_total``) is divided among the input's jobs in proportion to the
             epsilons they list.

An input with a single job needs neither. Different members of a collection are different private graphs
(disjoint records), so their budgets are separate (parallel composition).
"""

from __future__ import annotations

import glob
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrelease.errors import OptionError

_SHARING = ("compose", "split")


def _nodes_value(source: Path, where: str, value: Any, base: Path) -> str | None:
    """``nodes``: a node count, or a node-list file relative to the plan."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise _plan_error(source, f"{where}.nodes must be >= 1, got {value}")
        return str(value)
    path = Path(str(value))
    path = path if path.is_absolute() else base / path
    if not path.is_file():
        raise _plan_error(source, f"{where}.nodes: no node-list file {path}")
    return str(path)


def _node_set_value(source: Path, where: str, value: Any) -> str | None:
    if value is None:
        return None
    if value not in ("declared", "from-edges"):
        raise _plan_error(source, f"{where}.node_set must be 'declared' or 'from-edges', got {value!r}")
    return str(value)


@dataclass(frozen=True)
class InputSpec:
    name: str
    path: Path
    format: str | None = None
    members: tuple[int, ...] | str | None = None  # None: a single graph; "all": every member of a collection
    sharing: str | None = None
    epsilon_cap: float | None = None
    delta_cap: float | None = None
    epsilon_total: float | None = None
    delta_total: float | None = None
    nodes: str | None = None  # the owner's node set for an edge list: a count or a node-list file
    node_set: str | None = None  # "declared" (default) or "from-edges"


@dataclass(frozen=True)
class Job:
    """One release: one private graph (a file, or one member of a collection), one method, one budget."""

    job_id: str
    input_name: str
    path: Path
    format: str | None
    member: int | None
    method: str
    epsilon: float
    delta: float
    num_graphs: int
    options: dict[str, Any] = field(default_factory=dict)
    out: Path = Path()
    seed: int | None = None
    allow_uncertified: bool = False
    audit: bool = True
    nodes: str | None = None
    node_set: str | None = None

    @property
    def input_key(self) -> str:
        """Identifies the private graph this job reads (budget accounting is per key)."""
        return f"{self.input_name}[{self.member}]" if self.member is not None else self.input_name


@dataclass(frozen=True)
class Plan:
    name: str
    source: Path
    output: Path
    inputs: tuple[InputSpec, ...]
    jobs: tuple[Job, ...]
    seed: int | None = None

    def jobs_by_input(self) -> dict[str, list[Job]]:
        groups: dict[str, list[Job]] = {}
        for job in self.jobs:
            groups.setdefault(job.input_key, []).append(job)
        return groups


def _plan_error(source: Path, message: str) -> OptionError:
    return OptionError(f"plan {source}: {message}")


def _positive(source: Path, where: str, value: Any, *, allow_none: bool = True) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise _plan_error(source, f"{where} must be a positive number, got {value!r}")
    return float(value)


def _parse_members(source: Path, where: str, value: Any) -> tuple[int, ...] | str | None:
    if value is None:
        return None
    if value == "all":
        return "all"
    if isinstance(value, str):
        m = re.fullmatch(r"\s*(\d*)\s*:\s*(\d*)\s*", value)
        if not m:
            raise _plan_error(source, f"{where}: members must be \"all\", \"A:B\" or a list of indices, got {value!r}")
        start = int(m.group(1) or 0)
        if not m.group(2):
            return f"{start}:"
        stop = int(m.group(2))
        if stop <= start:
            raise _plan_error(source, f"{where}: empty member range {value!r}")
        return tuple(range(start, stop))
    if isinstance(value, list) and value and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                                                 for v in value):
        return tuple(value)
    raise _plan_error(source, f"{where}: members must be \"all\", \"A:B\" or a list of indices >= 0, got {value!r}")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "x"


def _eps_tag(eps: float) -> str:
    return f"eps{eps:g}".replace(".", "p")


def load_plan(path: str | Path, *, member_counts: dict[str, int] | None = None) -> Plan:
    """Parse and validate a plan file; expand it into jobs and check every per-input budget.

    ``member_counts`` maps input names to their number of collection members; when absent, collections named with
    ``members = "all"`` (or an open range) are opened to count their graphs.
    """
    source = Path(path)
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise OptionError(f"plan file {source} does not exist") from None
    except (OSError, UnicodeDecodeError) as err:
        raise OptionError(f"plan file {source} cannot be read: {err}") from err
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise _plan_error(source, f"not valid TOML: {err}") from err
    return parse_plan(raw, source=source, member_counts=member_counts)


def parse_plan(raw: dict[str, Any], *, source: Path, member_counts: dict[str, int] | None = None) -> Plan:
    known = {"name", "output", "delta", "graphs_per_job", "seed", "allow_uncertified", "audit", "inputs", "runs"}
    unknown = set(raw) - known
    if unknown:
        raise _plan_error(source, f"unknown top-level key(s) {sorted(unknown)}; allowed: {sorted(known)}")
    base = source.parent
    name = str(raw.get("name", source.stem))
    output = base / str(raw.get("output", f"{_safe(name)}-releases"))
    default_delta = _positive(source, "delta", raw.get("delta", 1e-5), allow_none=False)
    if default_delta >= 1:
        raise _plan_error(source, f"delta must be < 1, got {default_delta}")
    graphs_per_job = raw.get("graphs_per_job", 1)
    if isinstance(graphs_per_job, bool) or not isinstance(graphs_per_job, int) or graphs_per_job < 1:
        raise _plan_error(source, f"graphs_per_job must be an integer >= 1, got {graphs_per_job!r}")
    seed = raw.get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        raise _plan_error(source, f"seed must be an integer, got {seed!r}")
    audit_cfg = raw.get("audit", {})
    if not isinstance(audit_cfg, dict):
        raise _plan_error(source, "[audit] must be a table")
    audit = bool(audit_cfg.get("enabled", True))
    allow_uncertified = bool(raw.get("allow_uncertified", False))

    raw_inputs = raw.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise _plan_error(source, "needs at least one [[inputs]] table with name and path")
    inputs: list[InputSpec] = []
    for i, item in enumerate(raw_inputs):
        where = f"inputs[{i}]"
        if not isinstance(item, dict) or "path" not in item:
            raise _plan_error(source, f"{where} needs a path")
        allowed = {"name", "path", "format", "members", "sharing", "epsilon_cap", "delta_cap", "epsilon_total",
                   "delta_total", "nodes", "node_set"}
        extra = set(item) - allowed
        if extra:
            raise _plan_error(source, f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(allowed)}")
        sharing = item.get("sharing")
        if sharing is not None and sharing not in _SHARING:
            raise _plan_error(source, f"{where}: sharing must be one of {_SHARING}, got {sharing!r}")
        pattern = str(item["path"])
        full = pattern if Path(pattern).is_absolute() else str(base / pattern)
        paths = sorted(glob.glob(full)) if any(ch in pattern for ch in "*?[") else [full]
        if not paths:
            raise _plan_error(source, f"{where}: no file matches {pattern!r}")
        members = _parse_members(source, where, item.get("members"))
        if len(paths) > 1 and members is not None:
            raise _plan_error(source, f"{where}: members cannot be combined with a glob that matches several files")
        for j, p in enumerate(paths):
            if not Path(p).exists():
                raise _plan_error(source, f"{where}: input {p} does not exist")
            label = str(item.get("name", Path(pattern).stem))
            spec_name = label if len(paths) == 1 else f"{label}-{_safe(Path(p).stem)}"
            inputs.append(InputSpec(
                name=_safe(spec_name),
                path=Path(p),
                format=item.get("format"),
                members=members,
                sharing=sharing,
                epsilon_cap=_positive(source, f"{where}.epsilon_cap", item.get("epsilon_cap")),
                delta_cap=_positive(source, f"{where}.delta_cap", item.get("delta_cap")),
                epsilon_total=_positive(source, f"{where}.epsilon_total", item.get("epsilon_total")),
                delta_total=_positive(source, f"{where}.delta_total", item.get("delta_total")),
                nodes=_nodes_value(source, where, item.get("nodes"), base),
                node_set=_node_set_value(source, where, item.get("node_set")),
            ))
    names = [s.name for s in inputs]
    duplicates = {n for n in names if names.count(n) > 1}
    if duplicates:
        raise _plan_error(source, f"input names must be unique; repeated: {sorted(duplicates)}")

    raw_runs = raw.get("runs")
    if not isinstance(raw_runs, list) or not raw_runs:
        raise _plan_error(source, "needs at least one [[runs]] table with methods and epsilons")
    jobs: list[Job] = []
    by_name = {s.name: s for s in inputs}
    for r, run in enumerate(raw_runs):
        where = f"runs[{r}]"
        allowed = {"inputs", "methods", "epsilons", "delta", "options", "graphs"}
        extra = set(run) - allowed
        if extra:
            raise _plan_error(source, f"{where}: unknown key(s) {sorted(extra)}; allowed: {sorted(allowed)}")
        methods = run.get("methods")
        if not isinstance(methods, list) or not methods or not all(isinstance(m, str) for m in methods):
            raise _plan_error(source, f"{where}: methods must be a non-empty list of method names")
        epsilons = run.get("epsilons")
        if not isinstance(epsilons, list) or not epsilons:
            raise _plan_error(source, f"{where}: epsilons must be a non-empty list of positive numbers")
        epsilons = [_positive(source, f"{where}.epsilons", e, allow_none=False) for e in epsilons]
        delta = _positive(source, f"{where}.delta", run.get("delta", default_delta), allow_none=False)
        options = run.get("options", {})
        if not isinstance(options, dict) or not all(isinstance(v, dict) for v in options.values()):
            raise _plan_error(source, f"{where}: options must be a table of per-method tables")
        for method_name, method_options in options.items():
            if "seed" in method_options:
                # A fixed seed makes a release reproducible, hence not private; the plan-level `seed` is the only
                # way to ask for one, and it marks every certificate `reproducible_seed_used`.
                raise _plan_error(source, f"{where}.options.{method_name}: 'seed' is not a method option; set the "
                                          "top-level seed (reproducibility tests only)")
        unknown_opts = set(options) - set(methods)
        if unknown_opts:
            raise _plan_error(source, f"{where}: options for methods not in this run: {sorted(unknown_opts)}")
        run_inputs = run.get("inputs", names)
        missing = [n for n in run_inputs if n not in by_name]
        if missing:
            raise _plan_error(source, f"{where}: unknown input(s) {missing}; inputs are {names}")
        num_graphs = run.get("graphs", graphs_per_job)
        for input_name in run_inputs:
            spec = by_name[input_name]
            for member in _expand_members(spec, source, member_counts):
                for method in methods:
                    for eps in epsilons:
                        tag = f"{spec.name}" + (f"/m{member:05d}" if member is not None else "")
                        job_id = f"{tag}/{_safe(method)}/{_eps_tag(eps)}"
                        job_seed = None if seed is None else _job_seed(seed, job_id)
                        jobs.append(Job(
                            job_id=job_id, input_name=spec.name, path=spec.path, format=spec.format,
                            member=member, method=method, epsilon=eps, delta=delta, num_graphs=int(num_graphs),
                            options=dict(options.get(method, {})), out=output / job_id, seed=job_seed,
                            allow_uncertified=allow_uncertified, audit=audit, nodes=spec.nodes,
                            node_set=spec.node_set,
                        ))
    ids = [j.job_id for j in jobs]
    repeated = {i for i in ids if ids.count(i) > 1}
    if repeated:
        raise _plan_error(source, f"two runs produce the same job(s) {sorted(repeated)[:3]}")
    jobs = _apply_budget_sharing(source, inputs, jobs)
    return Plan(name=name, source=source, output=output, inputs=tuple(inputs), jobs=tuple(jobs), seed=seed)


def _job_seed(plan_seed: int, job_id: str) -> int:
    # A stable per-job seed (independent of executor and job order) so that local and Ray runs agree.
    import hashlib

    digest = hashlib.sha256(f"{plan_seed}:{job_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % (2**63 - 1)


def _expand_members(spec: InputSpec, source: Path, member_counts: dict[str, int] | None) -> list[int | None]:
    if spec.members is None:
        return [None]
    if isinstance(spec.members, tuple):
        count = None if member_counts is None else member_counts.get(spec.name)
        if count is not None and max(spec.members) >= count:
            raise _plan_error(source, f"input {spec.name}: member {max(spec.members)} out of range (it has {count})")
        return list(spec.members)
    count = None if member_counts is None else member_counts.get(spec.name)
    if count is None:
        from graphrelease.graph import GraphCollection
        from graphrelease.io import read_graph

        data = read_graph(spec.path, fmt=spec.format).data
        if not isinstance(data, GraphCollection):
            raise _plan_error(source, f"input {spec.name}: members given but {spec.path} is a single graph")
        count = len(data)
    start = 0 if spec.members == "all" else int(str(spec.members).rstrip(":"))
    return list(range(start, count))


def _apply_budget_sharing(source: Path, inputs: list[InputSpec], jobs: list[Job]) -> list[Job]:
    """Check (compose) or assign (split) every private graph's budget across its jobs."""
    specs = {s.name: s for s in inputs}
    groups: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        groups.setdefault(job.input_key, []).append(index)
    out = list(jobs)
    for key, indices in groups.items():
        spec = specs[jobs[indices[0]].input_name]
        members = [jobs[i] for i in indices]
        if len(members) > 1 and spec.sharing is None:
            raise _plan_error(
                source,
                f"input {spec.name} has {len(members)} jobs on the same private graph; say how they share its "
                "budget: sharing = \"compose\" with epsilon_cap, or sharing = \"split\" with epsilon_total",
            )
        if spec.sharing == "compose" or (spec.sharing is None and spec.epsilon_cap is not None):
            if spec.epsilon_cap is None:
                raise _plan_error(source, f"input {spec.name}: sharing = \"compose\" needs epsilon_cap")
            total_eps = sum(j.epsilon for j in members)
            total_delta = sum(j.delta for j in members)
            if total_eps > spec.epsilon_cap * (1 + 1e-12):
                raise _plan_error(
                    source,
                    f"input {key}: its {len(members)} jobs spend epsilon {total_eps:g} in total (basic composition), "
                    f"above epsilon_cap {spec.epsilon_cap:g}; lower the epsilons or use sharing = \"split\"",
                )
            delta_cap = spec.delta_cap if spec.delta_cap is not None else 10 * max(j.delta for j in members)
            if total_delta > delta_cap * (1 + 1e-12):
                raise _plan_error(
                    source, f"input {key}: total delta {total_delta:g} of its jobs exceeds delta_cap {delta_cap:g}"
                )
        elif spec.sharing == "split":
            if spec.epsilon_total is None:
                raise _plan_error(source, f"input {spec.name}: sharing = \"split\" needs epsilon_total")
            weight = sum(j.epsilon for j in members)
            delta_total = spec.delta_total if spec.delta_total is not None else members[0].delta
            for i in indices:
                share = jobs[i].epsilon / weight
                out[i] = _with(jobs[i], epsilon=spec.epsilon_total * share, delta=delta_total * share)
    return out


def _with(job: Job, **changes: Any) -> Job:
    values = dict(job.__dict__)
    values.update(changes)
    return Job(**values)
