"""The privacy ledger: every mechanism that read private data, in order, with its parameters.

Mechanisms never compute epsilon. They :meth:`PrivacyLedger.record` an entry; an accountant
(:mod:`graphrelease.privacy.accountants`) composes the ledger, and the certificate is rendered from it.

Each entry names a registered *analysis* (``mechanism``) and carries the parameters that analysis needs. The
vocabulary of parameter names is the project's one vocabulary: ``noise_multiplier`` (noise standard deviation
divided by the scale unit, e.g. ``max_grad_norm``), ``sensitivity`` (the query's sensitivity in that same unit, so
the effective Gaussian noise multiplier is ``noise_multiplier / sensitivity``), ``sample_rate``, ``sampling``
(``none``/``poisson``/``wor``), ``neighboring`` (``add_remove``/``replace_one``), ``steps`` (identical invocations,
the entry's ``count``), ``group_size``.

Mechanism names understood by the accountants (see ``docs/privacy.md`` for each proof):

``gaussian``                  params: noise_multiplier
``subsampled_gaussian``       params: noise_multiplier, sample_rate, sampling (poisson|wor),
                              neighboring (add_remove|replace_one), dataset_size (wor only)
``laplace``                   params: epsilon (= L1 sensitivity / scale; pure DP)
``exponential``               params: epsilon (per selection; pure DP, bounded range), scale (the Gumbel scale in
                              utility units, 2 sensitivity / epsilon; sensitivity / epsilon with monotone: true), or
                              for randomised response keep_probability, flip_in_probability
``gumbel_topk``               params: epsilon (per selection), k (selections, one-shot Gumbel top-k), scale
``permute_and_flip``          params: epsilon (per selection; report-noisy-max with exponential noise, pure DP, not
                              bounded range: analysed as generic pure DP)
``joint_convexity_gaussian``  params: noise_multiplier, pair_rate (PRIVACY.md option B)
``relational_coupled``        params of Theorem 3 of the relational-learning seed: noise_multiplier, sample_rate
                              (positive edges, Poisson), num_negatives, degree_cap, num_nodes, num_edges,
                              clipping (freq|standard)

Meaning of ``sensitivity`` per analysis (see ``graphrelease.privacy.accountants``): for ``gaussian`` the L2 distance
between the two neighbours' query values; for ``subsampled_gaussian`` the bound on ONE example's contribution (so
under ``replace_one`` the two versions of the changed example are up to ``2 * sensitivity`` apart — do not pass 2
yourself); for ``joint_convexity_gaussian`` the per-example bound, the pair distance being ``2 * sensitivity``.
``group_size > 1`` is handled by the accountant (Gaussian: distance times g; Poisson: super-example with rate
``1-(1-q)^g`` and bound ``g * sensitivity``; WOR, joint convexity and relational refuse it).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Mapping

from graphrelease.errors import OptionError
from graphrelease.privacy.adjacency import Adjacency

ParamValue = float | int | str | bool


@dataclass(frozen=True)
class LedgerEntry:
    """One mechanism applied ``count`` times with identical parameters.

    Parameters
    ----------
    mechanism:
        Name of the registered analysis (see module docstring).
    stage:
        What the mechanism protected, e.g. ``"dpgvae.decoder.dpsgd"`` or ``"privgraph.community_sizes"``.
    params:
        The analysis' parameters (keyword vocabulary in the module docstring).
    count:
        Number of identical invocations (DP-SGD steps).
    sensitivity:
        Sensitivity of the pre-noise query in units of the noise scale's base (``max_grad_norm`` for DP-SGD). For
        Gaussian mechanisms, L2; for Laplace, L1 (already folded into ``epsilon``; kept here for the record).
    group_size:
        Number of records one privacy unit can change at once (e.g. D+1 under k-neighbour DPDGC). Analyses apply
        group privacy where it is > 1.
    proof:
        Anchor of the proof sketch in ``docs/privacy.md``.
    sound:
        ``False`` for mechanisms kept only to reproduce a published (unsound) algorithm. Any unsound entry makes the
        certificate's guarantee ``none``.
    note:
        Free text for the certificate's reader (why unsound, what was treated as public, ...).
    """

    mechanism: str
    stage: str
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    count: int = 1
    sensitivity: float = 1.0
    group_size: int = 1
    proof: str = ""
    sound: bool = True
    note: str = ""

    def __post_init__(self) -> None:
        if not self.mechanism:
            raise OptionError("ledger entry needs a mechanism name")
        if int(self.count) < 0:
            raise OptionError(f"ledger entry '{self.stage}': count must be >= 0, got {self.count}")
        if not (self.sensitivity > 0):
            raise OptionError(f"ledger entry '{self.stage}': sensitivity must be > 0, got {self.sensitivity}")
        if int(self.group_size) < 1:
            raise OptionError(f"ledger entry '{self.stage}': group_size must be >= 1, got {self.group_size}")
        object.__setattr__(self, "params", dict(self.params))
        object.__setattr__(self, "count", int(self.count))
        object.__setattr__(self, "group_size", int(self.group_size))

    def with_count(self, count: int) -> "LedgerEntry":
        return LedgerEntry(**{**self.to_dict(), "count": count})

    def same_mechanism(self, other: "LedgerEntry") -> bool:
        """Equal in everything but ``count``: consecutive such entries are merged into one."""
        mine, theirs = self.to_dict(), other.to_dict()
        mine.pop("count"), theirs.pop("count")
        return mine == theirs

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["params"] = dict(self.params)
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "LedgerEntry":
        return cls(**dict(data))


class PrivacyLedger:
    """The run's list of mechanism entries under one adjacency notion. Append-only."""

    def __init__(self, adjacency: Adjacency | str) -> None:
        self.adjacency = Adjacency.parse(adjacency)
        self._entries: list[LedgerEntry] = []
        self._listeners: list = []

    def record(self, entry: LedgerEntry) -> None:
        """Append ``entry``; merge it into the last entry when only the count differs (one line per DP-SGD run)."""
        if entry.count == 0:
            return
        if self._entries and self._entries[-1].same_mechanism(entry):
            last = self._entries[-1]
            self._entries[-1] = last.with_count(last.count + entry.count)
        else:
            self._entries.append(entry)
        for listener in self._listeners:
            listener(self)

    def add_listener(self, callback) -> None:
        """Call ``callback(ledger)`` after every record (progress bars showing epsilon spent)."""
        self._listeners.append(callback)

    def extend(self, entries: "PrivacyLedger | list[LedgerEntry]") -> None:
        for e in entries:
            self.record(e)

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        return tuple(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def sound(self) -> bool:
        return all(e.sound for e in self._entries)

    def unsound_reasons(self) -> list[str]:
        return [f"{e.stage}: {e.note or 'not a sound mechanism'}" for e in self._entries if not e.sound]

    def copy(self) -> "PrivacyLedger":
        other = PrivacyLedger(self.adjacency)
        other._entries = list(self._entries)
        return other

    def to_dict(self) -> dict[str, Any]:
        return {"adjacency": self.adjacency.name, "entries": [e.to_dict() for e in self._entries]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PrivacyLedger":
        ledger = cls(data["adjacency"])
        ledger._entries = [LedgerEntry.from_dict(e) for e in data["entries"]]
        return ledger

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)

    def __repr__(self) -> str:
        return f"PrivacyLedger(adjacency={self.adjacency.name!r}, entries={len(self._entries)})"
