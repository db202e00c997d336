r"""Privacy loss distributions (dp-accounting ``pld`` module) of the ledger's mechanisms.

Each function returns a ``dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution`` for ONE invocation
with *pessimistic* discretisation (so every epsilon read from it is an upper bound, Meiser & Mohammadi 2018;
Koskela et al. 2020; Doroshenko et al. 2022 "Connect the Dots").

* Gaussian: ``from_gaussian_mechanism(standard_deviation=sigma, sensitivity=s)``.
* Poisson-subsampled Gaussian, add/remove: the dominating pair :math:`(qN(s)+(1-q)N(0),\ N(0))` and its reverse
  (Zhu, Dong, Wang 2022, Theorem 11).
* Poisson-subsampled Gaussian, replace-one: dp-accounting's ``REPLACE_ONE`` pair
  :math:`(qN(s)+(1-q)N(0),\ qN(-s)+(1-q)N(0))` where ``s`` bounds ONE example's contribution (so the replaced
  example's two versions are up to ``2s`` apart). See ``docs/privacy.md#subsampled-gaussian-replace-one``.
* Laplace: ``from_laplace_mechanism(parameter=1/epsilon)`` (sensitivity 1).
* Any epsilon-DP mechanism (exponential, Gumbel top-k): ``from_privacy_parameters(epsilon, 0)`` — the PLD of the
  dominating pair of epsilon-DP (randomised response), valid for every epsilon-DP mechanism.
"""

from __future__ import annotations

#: Discretisation interval of the privacy loss (dp-accounting's default; the reference values were measured with it).
VALUE_DISCRETIZATION_INTERVAL = 1e-4


def _pld():
    from dp_accounting.pld import privacy_loss_distribution

    return privacy_loss_distribution


def identity():
    return _pld().identity(value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL)


def gaussian(noise_multiplier: float, sensitivity: float = 1.0, count: int = 1):
    """``count`` Gaussian invocations composed exactly: one Gaussian with std ``sigma / sqrt(count)``."""
    import math

    return _pld().from_gaussian_mechanism(
        standard_deviation=float(noise_multiplier) / math.sqrt(count),
        sensitivity=float(sensitivity),
        value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL,
    )


def poisson_gaussian(sample_rate: float, noise_multiplier: float, *, sensitivity: float = 1.0,
                     neighboring: str = "add_remove"):
    from dp_accounting import NeighboringRelation

    relation = {
        "add_remove": NeighboringRelation.ADD_OR_REMOVE_ONE,
        "replace_one": NeighboringRelation.REPLACE_ONE,
    }[neighboring]
    return _pld().from_gaussian_mechanism(
        standard_deviation=float(noise_multiplier),
        sensitivity=float(sensitivity),
        sampling_prob=float(sample_rate),
        neighboring_relation=relation,
        value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL,
    )


def laplace(epsilon: float):
    return _pld().from_laplace_mechanism(
        parameter=1.0 / float(epsilon), sensitivity=1.0, value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL
    )


def pure_dp(epsilon: float):
    from dp_accounting.pld import common

    return _pld().from_privacy_parameters(
        common.DifferentialPrivacyParameters(float(epsilon), 0.0),
        value_discretization_interval=VALUE_DISCRETIZATION_INTERVAL,
    )
