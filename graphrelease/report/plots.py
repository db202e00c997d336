"""Matplotlib (Agg) figures for the audit report, returned as PNG bytes. One line / bar group per release."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

ORIGINAL_STYLE = {"color": "black", "linewidth": 2.0}


def _figure(width: float = 6.4, height: float = 4.0):
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), dpi=96)
    return plt, fig, ax


def _png(plt, fig) -> bytes:
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    return buf.getvalue()


def degree_ccdf(histograms: dict[str, list[float]]) -> bytes | None:
    """Complementary CDF P(D >= k) of the degree distribution on log-log axes."""
    if not histograms:
        return None
    plt, fig, ax = _figure()
    for label, hist in histograms.items():
        p = np.asarray(hist, dtype=float)
        if p.size < 2:
            continue
        ccdf = p[::-1].cumsum()[::-1]
        k = np.arange(p.size)
        keep = (k >= 1) & (ccdf > 0)
        style = ORIGINAL_STYLE if label == "original" else {"linewidth": 1.2}
        ax.loglog(k[keep], ccdf[keep], label=label, **style)
    ax.set_xlabel("degree k")
    ax.set_ylabel("P(degree >= k)")
    ax.set_title("Degree distribution (CCDF)")
    ax.legend(fontsize=7)
    return _png(plt, fig)


def motif_bars(motifs: dict[str, Any]) -> bytes | None:
    """Proportions of each graphlet (count / total count) for the original and every release."""
    if not motifs or not motifs.get("names"):
        return None
    names = motifs["names"]
    series = {"original": motifs["original"]}
    series.update({k: v["vector"] for k, v in motifs.get("releases", {}).items()})
    plt, fig, ax = _figure(max(6.4, 0.35 * len(names) * max(1, len(series)) / 2), 4.0)
    width = 0.8 / len(series)
    x = np.arange(len(names))
    for i, (label, vec) in enumerate(series.items()):
        v = np.asarray(vec, dtype=float)
        total = v.sum()
        prop = v / total if total > 0 else v
        kw = {"color": "black"} if label == "original" else {}
        ax.bar(x + i * width - 0.4 + width / 2, prop, width=width, label=label, **kw)
    ax.set_yscale("symlog", linthresh=1e-4)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, fontsize=7)
    ax.set_ylabel("share of all graphlet counts")
    ax.set_title("Graphlet (motif) proportions")
    ax.legend(fontsize=7)
    return _png(plt, fig)


def privacy_utility(curves: dict[str, list[list[float]]]) -> bytes | None:
    """Mean relative error of the Table 1 statistics vs epsilon, one line per method audited at several epsilons
    (``curves`` from :func:`graphrelease.audit.verdict.privacy_utility_curves`). Small: it sits in the verdict."""
    curves = {k: v for k, v in curves.items() if len(v) >= 2}
    if not curves:
        return None
    plt, fig, ax = _figure(5.0, 2.6)
    for name, pts in sorted(curves.items()):
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xscale("log")
    # label the audited epsilons themselves: log-axis minor labels (3x10^-1, 4x10^-1 ...) overprint each other
    ticks = sorted({p[0] for pts in curves.values() for p in pts})
    ax.xaxis.set_minor_formatter(matplotlib_null_formatter())
    ax.set_xticks(ticks)
    ax.set_xticklabels([f"{t:g}" for t in ticks], fontsize=8)
    ax.set_xlabel("epsilon (certificate)")
    ax.set_ylabel("mean rel. error\n(LCC, TC, CPL, GINI, REDE)", fontsize=8)
    ax.set_title("Privacy-utility trade-off (lower is better)", fontsize=9)
    ax.legend(fontsize=7)
    return _png(plt, fig)


def matplotlib_null_formatter():
    from matplotlib.ticker import NullFormatter

    return NullFormatter()


def attack_roc(attacks: dict[str, dict[str, Any]]) -> bytes | None:
    """ROC curves of the link-inference attack per release, with the attack on the original as reference."""
    curves: list[tuple[str, dict[str, Any], bool]] = []
    reference_done = False
    for label, res in attacks.items():
        if "link_inference" in res:
            curves.append((f"{label}", res["link_inference"], False))
        if "link_inference_hidden" in res:
            curves.append((f"{label} (hidden links, re-fitted)", res["link_inference_hidden"]["release"], False))
        if "membership_model" in res:
            curves.append((f"{label} (model scores)", res["membership_model"], False))
        if "link_inference_reference" in res and not reference_done:
            curves.append(("original (non-private reference)", res["link_inference_reference"], True))
            reference_done = True
    curves = [c for c in curves if c[1].get("roc")]
    if not curves:
        return None
    plt, fig, ax = _figure(5.2, 4.6)
    for label, res, is_ref in curves:
        kw = ORIGINAL_STYLE if is_ref else {"linewidth": 1.2}
        ax.plot(res["roc"]["fpr"], res["roc"]["tpr"], label=f"{label}: AUC {res['auc']:.3f}", **kw)
    ax.plot([0, 1], [0, 1], linestyle=":", color="grey", label="chance")
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_title("Link inference: original edges vs non-edges")
    ax.legend(fontsize=7)
    return _png(plt, fig)


def empirical_bars(empirical: list[dict[str, Any]]) -> bytes | None:
    """Empirical lower bound on epsilon beside the certified (group) epsilon, per audited mechanism."""
    if not empirical:
        return None
    plt, fig, ax = _figure()
    labels = [e.get("label") or f"audit {i + 1}" for i, e in enumerate(empirical)]
    x = np.arange(len(labels))
    lower = [e["epsilon_lower"] for e in empirical]
    claimed = [e.get("claimed_group_epsilon") or 0.0 for e in empirical]
    ax.bar(x - 0.2, lower, width=0.4, label="empirical lower bound")
    ax.bar(x + 0.2, claimed, width=0.4, label="certified epsilon (group of k canaries)")
    ax.set_xticks(x)
    ax.set_xticklabels(labels, rotation=20, fontsize=7)
    ax.set_ylabel("epsilon")
    ax.set_title("Empirical privacy audit")
    ax.legend(fontsize=7)
    return _png(plt, fig)
