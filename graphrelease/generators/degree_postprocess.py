r"""Post-processing of a released degree sequence (issue 15): released values and public randomness only, no cost.

:func:`~graphrelease.generators.dp_stats.release_degrees` charges the Laplace releases (the sorted sequence, the
per-node ranks, the cumulative counts) and then hands their noisy values to these functions, in this order:

* :func:`interpolate_plateaus` — the isotonic fit's flat runs replaced by the line through their centres;
* :func:`splice_low_degrees` — the low end rebuilt from the noisy cumulative counts ``#{v : d_v <= j}``;
* :func:`dither_plateaus` / :func:`dither_scale` — values spread by a multiple of their plateau's standard error,
  the multiple chosen by a parametric bootstrap on the released values;
* :func:`debias_wedges` — the top values shrunk until the wedge count :func:`wedge_count` loses the excess the
  release's own noise adds.

Proofs of the releases and the post-processing argument: ``docs/privacy.md#dp-structural-statistics``. Split out of
:mod:`graphrelease.generators.dp_stats` so that each module stays one topic (and under the project's file size).
"""

from __future__ import annotations

import numpy as np

from graphrelease.audit.compare import degree_histogram_kl
from graphrelease.generators.classical_common import isotonic_increasing


#: Share of the nodes that one degree of a run of large counts starting above degree 2 must hold for
#: :func:`splice_low_degrees` to take the run, which must also have fewer nodes than a large count below it: a mode
#: that dominates where the distribution starts (near-uniform degrees: a grid, a lattice, a small-world ring; the
#: minimum degree of a preferential-attachment graph). There the sorted sequence's isotonic fit is one long plateau
#: whose ends it bends (a 40 x 40 grid at epsilon 1: a third of the nodes released with degree 0, degree KL 0.66),
#: where the counts place every step (0.08); Barabasi-Albert m = 3 0.36 -> 0.15, Holme-Kim m = 4 0.39 -> 0.18
#: (20 seeded releases each at epsilon 1). Elsewhere the counts are many small ones, each as noisy as a large one,
#: and the sorted sequence does better: with any run holding half the nodes taken, G(3000, 10/3000) went 0.078 ->
#: 0.175 at epsilon 1 and 0.038 -> 0.088 at 4 (its largest count holds 12.5%), the e-mail proxies 0.22 -> 0.32 at 4.
SPLICE_MIN_SHARE = 0.3


def splice_low_degrees(sorted_values: np.ndarray, noisy_cumulative: np.ndarray, scale: float,
                       min_snr: float = 4.0, sorted_sd: float | None = None) -> np.ndarray:
    """Post-processing: the low end of a released sorted degree sequence rebuilt from noisy cumulative counts.

    The sorted sequence (Hay et al.) locates the step from degree ``j`` to ``j + 1`` only through values that differ
    by 1 under noise of scale ``2/epsilon`` per entry, so at low degrees its isotonic fit places the steps badly (on
    Cora at epsilon 1 the count of degree-2 nodes came out 1,316 for 583); the cumulative counts give each step's
    position with one Laplace draw. Degrees ``j`` are taken from the counts while the count of nodes at ``j``
    (isotonic-fitted cumulative differences) stays at least ``min_snr`` noise standard deviations (the run of such
    degrees from the first, with the smaller ones below it); the positions above
    keep the sorted sequence's values, raised to at least the first degree not taken from the counts. A run that
    starts above degree 2 is taken only if fewer nodes than a large count lie below it and one of its degrees holds
    :data:`SPLICE_MIN_SHARE` of the nodes. With ``sorted_sd`` (the sorted sequence's noise standard deviation per
    entry), the positions whose sorted value stands ``min_snr`` of it above the first degree not taken from the
    counts are never rewritten: the counts' noise cannot take them.
    """
    v = np.asarray(sorted_values, dtype=np.float64).copy()
    n = v.size
    if n == 0 or np.asarray(noisy_cumulative).size == 0:
        return v
    cum = np.clip(isotonic_increasing(np.asarray(noisy_cumulative, dtype=np.float64)), 0.0, n)
    counts = np.diff(np.concatenate([[0.0], cum]))
    sd = np.sqrt(2.0) * float(scale)
    big = counts >= min_snr * sd
    if not big.any():
        return v
    # The run of well-measured degrees starts at the first large count (the small counts below it, e.g. no isolated
    # nodes, are measured as well: a step's position has the same noise whatever the count) and ends before the
    # first small count above it, where the sorted sequence locates the steps better.
    first = int(np.argmax(big))
    top = first + int(np.argmin(np.append(big[first:], False)))
    if first >= 3 and (cum[first - 1] >= min_snr * sd or counts[first:top].max() < SPLICE_MIN_SHARE * n):
        return v  # the low end is not where the nodes are (dense graph): the sorted sequence does better
    ends = np.rint(cum[:top]).astype(np.int64)
    if sorted_sd is not None:
        # Near the top the counts read n - (nodes above them) + noise, so a graph whose nodes nearly all sit in the
        # run (a wheel: 399 rim nodes of degree 3) had its isotonic count reach n in 4 of 40 fits at epsilon 1 and
        # its one hub, released by the sorted sequence at 399 +- 13, rewritten to 3 (no hub in the release).
        above = int(np.count_nonzero(v >= float(top) + min_snr * float(sorted_sd)))
        ends = np.minimum(ends, n - above)
    starts = np.concatenate([[0], ends[:-1]])
    for j, (a, b) in enumerate(zip(starts.tolist(), ends.tolist())):
        v[a:b] = float(j)
    v[ends[-1]:] = np.maximum(v[ends[-1]:], float(top))
    return np.maximum.accumulate(v)


def dither_plateaus(values: np.ndarray, fit: np.ndarray, free: np.ndarray, noise_sd: float,
                    rng: np.random.Generator, normals: np.ndarray | None = None) -> np.ndarray:
    """Post-processing of released values (public randomness, no privacy cost): every sorted value with ``free`` set
    moves by a Gaussian of its isotonic plateau's standard error, ``noise_sd / sqrt(plateau length)`` (``noise_sd`` is
    scaled by :func:`dither_scale`'s multiple in :func:`release_degrees`; ``normals``, if given, are the standard
    normal draws to use, one per value, so several scales can be compared on the same draws; ``fit`` is the
    isotonic fit whose flat runs are the plateaus), kept at or above the largest value not free (the low end the
    cumulative counts fixed) and below ``n - 1``; the sequence is sorted again.

    The exact-degree histogram of an isotonic fit is the derivative of a noisy staircase: where the true sequence
    rises by one degree every few dozen ranks the plateau levels' errors pile nodes onto some degrees and leave the
    next ones empty. A plateau of ``L`` entries pins its level to about ``noise_sd / sqrt(L)``; drawing the values
    within that error spreads them over the degrees the release cannot tell apart (long plateaus, well measured,
    barely move; hubs, measured by one entry each, move by the full noise). Measured on Facebook (permuted ids,
    epsilon 1, released-degree KL against the input): 0.45 -> 0.26 (median of 4 seeded fits).
    """
    v = np.asarray(values, dtype=np.float64).copy()
    starts = np.concatenate([[0], np.flatnonzero(np.diff(fit) != 0) + 1])
    lengths = np.diff(np.concatenate([starts, [fit.size]]))
    per = np.repeat(lengths, lengths).astype(np.float64)
    sd = noise_sd / np.sqrt(per)
    floor = float(v[~free].max(initial=0.0))
    z = rng.standard_normal(int(free.sum())) if normals is None else np.asarray(normals, dtype=np.float64)[free]
    v[free] = np.clip(v[free] + sd[free] * z, floor, fit.size - 1)
    return np.sort(v)


#: Multiples of the plateau standard error :func:`dither_scale` chooses from, and its bootstrap replicates.
DITHER_SCALES = (1.0, 1.5, 2.0, 3.0)
DITHER_REPLICATES = 6
def dither_scale(values: np.ndarray, fit: np.ndarray, free: np.ndarray, noise_sd: float, rng: np.random.Generator,
                 scales: tuple[float, ...] = DITHER_SCALES, replicates: int = DITHER_REPLICATES) -> float:
    """Post-processing: the multiple of the plateau standard error that :func:`dither_plateaus` should spread by,
    chosen by a parametric bootstrap on the release's own values (no private data, public randomness).

    The plateau standard error is the error of a plateau's *level*, but the histogram's error comes from the slope
    between levels: adjacent plateaus' independent level errors make the count per degree swing by a factor of two
    or three over runs of several degrees (Facebook at epsilon 1: 136-147 nodes at degrees 5-7, 34-55 at 14-16,
    where the input has 80-100 at each), and spreading by the level error alone leaves those lumps. How much more
    spreading pays depends on the graph (where the steps between degrees are narrow compared with the noise, as on
    Facebook's long low end, more; where the released values are exact counts, as on Cora's spliced low end, none).
    So the scale is measured on a stand-in: the released sequence, dithered at the level error and rounded, is
    taken as the truth; ``replicates`` fresh Laplace releases of it go through the same isotonic fit and
    interpolation (the ``free`` complement kept as given, as the splice does); each is dithered at every candidate
    multiple with the same normal draws, and the multiple with the smallest summed degree-histogram KL (the
    project's metric, :func:`graphrelease.audit.compare.degree_histogram_kl`) is returned. Cost: ``replicates``
    isotonic fits of ``n`` values.

    Measured (dp_bter's epsilon-1 / 4 shares, 12 seeded releases, permuted ids, median released-histogram KL at
    multiple 1 -> chosen): Facebook 0.178 -> 0.137 / 0.119 -> 0.095, Cora 0.093 -> 0.081 / 0.040 -> 0.045, LastFM
    0.049 -> 0.045 / 0.029 -> 0.029, Chameleon 0.449 -> 0.400 / 0.270 -> 0.297, Cora-ML 0.084 -> 0.088 / 0.047 ->
    0.046: a gain at epsilon 1, mixed at 4 (the stand-in truth is smoother than a real sequence, so the bootstrap
    leans to larger multiples). On sampled dp_bter graphs (6 paired seeds) the sampler spreads degrees itself:
    Facebook epsilon 1 0.139 -> 0.126, every other graph and epsilon within run-to-run spread (reports/
    deep_generators.md, "One graph").
    """
    n = int(np.asarray(fit).size)
    if n < 3 or not np.any(free):
        return float(scales[0])
    truth = np.rint(dither_plateaus(values, fit, free, noise_sd, rng)).astype(np.int64)
    scale = noise_sd / np.sqrt(2.0)  # Laplace scale of the sorted sequence's noise
    loss = np.zeros(len(scales))
    for _ in range(int(replicates)):
        f2 = isotonic_increasing(truth + rng.laplace(0.0, scale, n))
        v2 = np.clip(interpolate_plateaus(f2, noise_sd), 0.0, n - 1)
        v2[~free] = truth[~free]
        z = rng.standard_normal(n)
        for i, c in enumerate(scales):
            loss[i] += degree_histogram_kl(truth, np.rint(dither_plateaus(v2, f2, free, c * noise_sd, rng, normals=z)))
    return float(scales[int(np.argmin(loss))])


#: Bootstrap replicates of :func:`debias_wedges`, the quantile of the free values above which it shrinks, and the
#: largest share of their distance to it that it may take.
WEDGE_REPLICATES = 16
WEDGE_PIVOT = 0.9
WEDGE_MAX_SHRINK = 0.5


def debias_wedges(values: np.ndarray, free: np.ndarray, noise_sd: float, multiple: float,
                  rng: np.random.Generator, replicates: int = WEDGE_REPLICATES) -> np.ndarray:
    r"""Post-processing: the sorted released degrees with the excess of their wedge count :math:`W = \sum_v
    \binom{d_v}{2}` that the release's own noise adds taken out (public randomness, released values only).

    A noisy value :math:`d + e` has :math:`E[(d + e)^2] = d^2 + \mathrm{Var}(e)`: isotonic plateaus average the noise
    away where values are close, hubs (one entry per plateau) keep all of it, and :func:`dither_plateaus` adds
    variance on purpose; so :math:`W`, and with it the global clustering :math:`3T/W`, comes out biased. The excess is
    measured by a parametric bootstrap like :func:`dither_scale`'s: the rounded released sequence as the truth,
    ``replicates`` fresh Laplace releases (antithetic pairs) through the same isotonic fit, interpolation and dither
    (``multiple`` of ``noise_sd``), the ``free`` complement kept. The free values above their ``WEDGE_PIVOT``
    quantile are then moved towards it by one common share (bisection, at most ``WEDGE_MAX_SHRINK``) until
    :math:`W` is the released one minus the mean excess. Only the top is shrunk: that is where the excess sits, and
    the degree histogram's mass is below it (shrinking every value above the mean moved the mid degrees: Cora-ML
    released-degree KL +0.009 to +0.013 over 20 seeded releases at epsilon 1; above the 0.9 / 0.95 quantile +0.002 /
    -0.001, se 0.004). The degree total drops by what the top gives up; the sampler's edge total comes from the
    block counts, not from this sum.

    Measured (dp_bter, epsilon 1, 24 paired seeded fits, permuted ids): released :math:`W` / input :math:`W` Cora
    1.197 -> 1.005, Cora-ML 1.101 -> 0.995, sampled 1.205 -> 1.038 and 1.167 -> 1.044; on dense graphs the released
    W is already within 1.5% and barely moves. It never raises W. ``benchmarks/notes/structure_fidelity_log.md``
    (appended to ``reports/structure_fidelity.md``), "The wedge count".
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size
    if n < 3 or not np.any(free):
        return v.copy()
    truth = np.rint(v)
    excess, pairs = 0.0, max(int(replicates) // 2, 1)
    for _ in range(pairs):
        # Antithetic pairs (noise e and -e, dither draws z and -z): the hubs' term 2 d e, mean zero but the bulk of a
        # replicate's spread, cancels (Cora-ML at epsilon 1: sd of the excess / W 0.084 per replicate, 0.020 per pair).
        lap, z = rng.laplace(0.0, noise_sd / np.sqrt(2.0), n), rng.standard_normal(n)
        for sign in (1.0, -1.0):
            f2 = isotonic_increasing(truth + sign * lap)
            v2 = np.clip(interpolate_plateaus(f2, noise_sd), 0.0, n - 1)
            v2[~free] = truth[~free]
            excess += wedge_count(dither_plateaus(v2, f2, free, multiple * noise_sd, rng, normals=sign * z))
    target = wedge_count(v) - (excess / (2 * pairs) - wedge_count(truth))
    if target >= wedge_count(v):
        return v.copy()
    pivot = float(np.quantile(v[free], WEDGE_PIVOT))
    top = free & (v > pivot)

    def shrunk(share: float) -> np.ndarray:
        out = v.copy()
        out[top] -= share * (v[top] - pivot)
        return out

    lo, hi = 0.0, WEDGE_MAX_SHRINK
    if wedge_count(shrunk(hi)) > target:
        return shrunk(hi)  # order kept: a common share towards the pivot is monotone
    for _ in range(40):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if wedge_count(shrunk(mid)) > target else (lo, mid)
    return shrunk(0.5 * (lo + hi))


def interpolate_plateaus(y: np.ndarray, noise_sd: float | None = None) -> np.ndarray:
    """Replace the flat runs of an isotonic fit by the line through the runs' centres (post-processing).

    Isotonic regression of a noisy sorted sequence returns long plateaus (hundreds of nodes at one degree, none at the
    next few), which a sampler reproduces as spikes and gaps in the degree histogram. Interpolating between plateau
    centres keeps the fit non-decreasing and each plateau's level at its centre, and spreads its nodes over the
    degrees between its neighbours. With ``noise_sd`` (of one sorted entry) no value leaves its plateau's level by more
    than :data:`PLATEAU_BAND` standard errors of that level (``noise_sd / sqrt(length)``): a larger rise inside a
    plateau would have split it. Without that bound the line from a star's 499 leaves to its hub released a ramp of
    about 250 nodes rising to the hub's degree (top released degrees 499 / 468 / 415 for 499 / 1 / 1).
    """
    y = np.asarray(y, dtype=np.float64)
    if y.size < 3:
        return y.copy()
    starts = np.concatenate([[0], np.flatnonzero(np.diff(y) != 0) + 1])
    ends = np.concatenate([starts[1:], [y.size]])
    centres = (starts + ends - 1) / 2.0
    levels = y[starts]
    if centres.size < 2:
        return y.copy()
    # The first and last runs keep their level out to the ends (no extrapolation beyond the data).
    line = np.interp(np.arange(y.size, dtype=np.float64), centres, levels)
    if noise_sd is None:
        return line
    band = np.repeat(PLATEAU_BAND * float(noise_sd) / np.sqrt(ends - starts), ends - starts)
    return np.clip(line, y - band, y + band)


#: Standard errors of its level that :func:`interpolate_plateaus` lets a plateau's values move (a rise of about this
#: much inside a plateau is what isotonic regression cannot tell from noise).
PLATEAU_BAND = 10.0


def wedge_count(degrees: np.ndarray) -> float:
    """:math:`W = \\sum_v d_v (d_v - 1)/2` of (released) degrees: post-processing."""
    d = np.maximum(np.asarray(degrees, dtype=np.float64), 0.0)
    return float(np.sum(d * np.maximum(d - 1.0, 0.0) / 2.0))
