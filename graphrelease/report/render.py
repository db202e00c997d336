"""Render an audit (the dict of :meth:`AuditResult.to_dict`) as self-contained HTML, Markdown and JSON.

All three are built from the same dict, so they carry the same numbers. The first line of each says the document is
INTERNAL. HTML embeds its plots as base64 PNG data URIs and needs no network, scripts or external files.
"""

from __future__ import annotations

import base64
import html
import json
import re
from typing import Any, Callable

from graphrelease.report import plots

INTERNAL_NOTICE = (
    "INTERNAL - contains non-private statistics of the private input; do not publish, do not put inside a release"
)

TABLE1_HEADERS = (("lcc", "LCC"), ("tc", "TC"), ("cpl", "CPL"), ("gini", "GINI"), ("rede", "REDE"))
#: The statistics keys of the Table 1 columns, in TABLE1_HEADERS order (see graphrelease.audit.run.TABLE1_COLUMNS).
TABLE1_STATS = ("lcc_size", "triangle_count", "cpl", "gini", "rede")

ATTACK_LEGEND = {
    "auc": "AUC: area under the ROC curve of the attack score for original edges vs as many sampled non-edges; "
           "0.5 = chance, 1 = every edge identified",
    "average_precision": "AP: average precision of the same ranking",
    "accuracy": "accuracy: the attacker calls the top half of the test pairs (by score) edges; share of pairs "
                "labelled correctly (0.5 = chance)",
    "tpr_at_1pct_fpr": "TPR@1%FPR: share of edges detected at a threshold that flags at most 1% of non-edges",
    "link_inference": "link inference: Adamic-Adar proximity in the release of the original's pairs (nodes aligned "
                      "by identity when the release keeps the node count, else by degree rank)",
    "membership_adjacency": "edge membership (adjacency): score = 1 if the pair is an edge of the release",
    "membership_model": "edge membership (model): score = the released model's edge probability",
    "reference": "reference: the same attack on the original graph itself (what a non-private release leaks)",
    "hidden links": "hidden links (seed protocol, --refit-attack): 20% of the edges hidden, the release's method "
                    "re-fitted on the rest, released nodes aligned to the owner's by degree rank, hidden edges vs as "
                    "many non-edges scored by Adamic-Adar in the new release; beside the same scores on the "
                    "training graph itself",
}

EMPIRICAL_LEGEND = (
    "Empirical audit: a canary (an edge, a node or a whole graph, per the certificate's adjacency) inserted in half "
    "of the runs; attack = the release's score for the canary that gave the bound (several attacks are "
    "Bonferroni-corrected); eps lower bound = max over thresholds and the four (tail, ordering) events of "
    "log((TPR_lo - delta) / FPR_hi) with Clopper-Pearson bounds at the stated confidence, Bonferroni-corrected "
    "over all tests. It must not exceed the certified epsilon for the group of k canaries (k*eps by group "
    "privacy); 'violation' says it does, i.e. the mechanism is less private than certified."
)


def fmt(x: Any, digits: int = 4) -> str:
    """Human formatting shared by HTML and Markdown (``-`` for missing)."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
            return f"{x:.{digits - 1}e}"
        if float(x).is_integer() and abs(x) < 1e15:
            return f"{int(x):,}"
        return f"{x:.{digits}g}"
    return str(x)


def eps_cell(row: dict[str, Any]) -> str:
    eps = row.get("epsilon")
    if eps is None:
        return "-"
    g = row.get("guarantee")
    return fmt(eps) if g in (None, "proved") else f"{fmt(eps)} (guarantee {g})"


# ---------------------------------------------------------------------------------------------------- verdict
def privacy_line(p: dict[str, Any]) -> str:
    """Certified epsilon beside the attack figures and the empirical lower bound, in one line."""
    eps, g = p.get("epsilon"), p.get("guarantee")
    if eps is None:
        parts = ["no certified epsilon (no certificate, or non-private)"]
    elif g in (None, "proved"):
        parts = [f"certified epsilon {fmt(eps)} (delta {fmt(p.get('delta'))}, guarantee {g or 'not stated'})"]
    else:
        parts = [f"stated epsilon {fmt(eps)} but guarantee {g}: NOT a DP guarantee"]
    if "link_inference_auc" in p:
        ref = p.get("link_inference_auc_original")
        parts.append(f"link-inference AUC {p['link_inference_auc']:.2f}"
                     + (f" (original itself {ref:.2f}; 0.5 = chance)" if ref is not None else " (0.5 = chance)"))
    if "membership_advantage" in p:
        parts.append(f"membership advantage {p['membership_advantage']:.2f} "
                     f"(TPR@1%FPR {p['membership_tpr_at_1pct_fpr']:.2f})")
    if p.get("empirical_epsilon_lower") is not None:
        parts.append(f"empirical lower bound on epsilon {fmt(p['empirical_epsilon_lower'])} "
                     f"({fmt(p.get('empirical_runs'))} canary runs"
                     + ("; VIOLATION of the certified epsilon)" if p.get("empirical_violation") else ")"))
    return " · ".join(parts)


def verdict_lines(r: dict[str, Any]) -> list[tuple[str, str]]:
    """(kind, text) lines of one release's verdict, shared by HTML, Markdown and the CLI; kind is the CSS class."""
    lines = [("flag", "DEGENERATE: " + f) for f in r["flags"]]
    for kind, title in (("lost", "Lost"), ("changed", "Changed"), ("kept", "Kept")):
        if r[kind]:
            lines.append((kind, f"{title}: " + ", ".join(r[kind])))
    if not r["items"] and not r["flags"]:
        lines.append(("changed", "no structure compared (no synthetic graphs, or the statistics stage was not run)"))
    lines.append(("privacy", "Privacy: " + privacy_line(r["privacy"])))
    return lines


# ---------------------------------------------------------------------------------------------------- tables
def _sections(d: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]], str]]:
    """(title, headers, rows, caption) for every table, shared by HTML and Markdown."""
    out = []
    o = d["original"]
    orig_stats = (d.get("statistics") or {}).get("original") or {}
    out.append((
        "Inputs",
        ["", "name / label", "method", "mode", "adjacency", "epsilon", "delta", "guarantee", "graphs", "nodes",
         "edges"],
        [["original", o["name"], "-", "-", "-", "-", "-", "-", fmt(o["num_graphs"]), fmt(o["num_nodes"]),
          fmt(o["num_edges"])]]
        + [[f"release {i + 1}", r["label"], fmt(r.get("method")), fmt(r.get("mode")), fmt(r.get("adjacency")),
            fmt(r.get("epsilon")), fmt(r.get("delta")), fmt(r.get("guarantee")), fmt(r.get("num_graphs")),
            fmt(r.get("num_nodes")), fmt(r.get("num_edges"))] for i, r in enumerate(d["releases"])],
        "nodes/edges: totals over the collection for the original, first graph for a release. guarantee: "
        + d["legend"].get("guarantee", ""),
    ))
    if d.get("table1"):
        out.append((
            "Comparison (Table 1 layout)",
            ["release"] + [h for _, h in TABLE1_HEADERS] + ["mean rel. error", "eps"],
            ([["original (values)"] + [fmt(orig_stats.get(stat)) for stat in TABLE1_STATS] + ["-", "-"]]
             if orig_stats else [])
            + [[r["release"]] + [fmt(r.get(k)) for k, _ in TABLE1_HEADERS] + [fmt(r.get("mean_relative_error")),
                                                                               eps_cell(r)]
               for r in d["table1"]],
            "First row: the original's values; release rows: " + d["legend"]["table1"]
            + " Mean rel. error: " + d["legend"]["relative_error"],
        ))
    stats = d.get("statistics") or {}
    if stats:
        cols = list(stats)
        keys = list(stats["original"])
        out.append((
            "Graph statistics",
            ["statistic"] + cols,
            [[k] + [fmt(stats[c].get(k)) for c in cols] for k in keys],
            "Each statistic is defined in the legend at the end (stat:NAME). Collections: mean over graphs.",
        ))
    motifs = d.get("motifs") or {}
    if motifs.get("releases"):
        out.append((
            "Motif and degree-vector similarity",
            ["release", "motif cosine", "degree-vector cosine"],
            [[k, fmt(v.get("motif_cosine")), fmt(v.get("degree_cosine"))] for k, v in motifs["releases"].items()],
            d["legend"]["motif_cosine"] + "; " + d["legend"]["degree_cosine"],
        ))
        out.append((
            "Motif counts",
            ["graphlet", "original"] + list(motifs["releases"]),
            [[name, fmt(motifs["original"][i])] + [fmt(v["vector"][i]) for v in motifs["releases"].values()]
             for i, name in enumerate(motifs["names"])],
            "Counts of connected graphlets (not necessarily induced unless stated in the motif legend), summed over "
            "the graphs compared.",
        ))
    if d.get("mmd"):
        keys = sorted({k for v in d["mmd"].values() for k in v})
        out.append((
            "MMD between graph sets",
            ["release"] + keys,
            [[lab] + [fmt(v.get(k)) for k in keys] for lab, v in d["mmd"].items()],
            d["legend"].get("mmd", "GraphRNN-style maximum mean discrepancy (lower = closer)."),
        ))
    ds_rows = []
    for lab, tasks in (d.get("downstream") or {}).items():
        for t in tasks:
            if "skipped" in t and len(t) == 2:
                ds_rows.append([lab, t["task"], "skipped: " + t["skipped"]])
                continue
            metrics = ", ".join(f"{k} {fmt(v)}" for k, v in t.items()
                                if k not in ("task", "model", "classifier", "note") and not isinstance(v, str))
            extra = [v for k, v in t.items() if isinstance(v, str) and k not in ("task",)]
            ds_rows.append([lab, t["task"], metrics + ("; " + "; ".join(extra) if extra else "")])
    if ds_rows:
        out.append((
            "Downstream utility",
            ["release", "task", "results"],
            ds_rows,
            "Trained on the release, tested on held-out real data. release_* = trained on the release, original_* / "
            "real_on_real = the same model on the real data (ceiling), features_only_mlp = no structure, "
            "majority_class = always the most frequent class. Accuracies in [0, 1]; AUC/AP for link prediction.",
        ))
    atk_rows = []
    reference_added = False
    for lab, res in (d.get("attacks") or {}).items():
        for key in ("link_inference", "membership_adjacency", "membership_model"):
            if key in res:
                r = res[key]
                atk_rows.append([lab, key, fmt(r["auc"]), fmt(r["average_precision"]), fmt(r["accuracy"]),
                                 fmt(r["tpr_at_1pct_fpr"]), fmt(r["positives"])])
        if "link_inference_hidden" in res:
            h = res["link_inference_hidden"]
            for who, r in (("re-fitted release", h["release"]), ("training graph itself", h["reference"])):
                atk_rows.append([lab, f"hidden links ({who})", fmt(r["auc"]), fmt(r["average_precision"]),
                                 fmt(r["accuracy"]), fmt(r["tpr_at_1pct_fpr"]), fmt(r["positives"])])
        if "link_inference_reference" in res and not reference_added:
            r = res["link_inference_reference"]
            atk_rows.append(["original (reference)", "link_inference", fmt(r["auc"]), fmt(r["average_precision"]),
                             fmt(r["accuracy"]), fmt(r["tpr_at_1pct_fpr"]), fmt(r["positives"])])
            reference_added = True
    if atk_rows:
        out.append((
            "Attacks",
            ["release", "attack", "AUC", "AP", "accuracy", "TPR@1%FPR", "positives"],
            atk_rows,
            " ".join(f"{v}." for v in ATTACK_LEGEND.values()),
        ))
    if d.get("empirical"):
        out.append((
            "Empirical privacy audit",
            ["mechanism", "canary", "attack", "runs (in/out)", "canaries k", "eps lower bound", "confidence", "event",
             "TPR / FPR", "stated eps (group of k)", "delta (group)", "guarantee", "violation"],
            [[e.get("label") or "-", e.get("kind", "edge"), e.get("attack", "score"), f"{e['runs_in']}/{e['runs_out']}",
              fmt(e["canaries_per_run"]), fmt(e["epsilon_lower"]), fmt(e["confidence"]), e["bound"]["event"],
              f"{fmt(e['bound']['tpr'])} / {fmt(e['bound']['fpr'])}", fmt(e.get("claimed_group_epsilon")),
              fmt(e.get("claimed_group_delta")), fmt(e.get("guarantee")), fmt(e.get("violation"))]
             for e in d["empirical"]],
            EMPIRICAL_LEGEND + " Protocol: " + d["empirical"][0].get("protocol", ""),
        ))
    if d.get("timings"):
        out.append(("Timings", ["stage", "seconds"], [[k, f"{v:.2f}"] for k, v in d["timings"].items()],
                    "Wall-clock seconds per audit stage on this machine."))
    return out


def _legend_rows(d: dict[str, Any]) -> list[tuple[str, str]]:
    rows = [(k, v) for k, v in d.get("legend", {}).items()]
    rows += [(f"attack:{k}", v) for k, v in ATTACK_LEGEND.items()]
    return rows


# ---------------------------------------------------------------------------------------------------- JSON
def render_json(d: dict[str, Any]) -> str:
    """JSON whose first line carries the INTERNAL notice (key ``_internal``); valid JSON throughout."""
    body = json.dumps(d, indent=1, sort_keys=False, allow_nan=False)
    return "{" + json.dumps("_internal") + ": " + json.dumps(INTERNAL_NOTICE) + ",\n" + body[1:].lstrip("\n") + "\n"


# ---------------------------------------------------------------------------------------------------- Markdown
def _md_cell(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(d: dict[str, Any]) -> str:
    lines = [f"**{INTERNAL_NOTICE}**", "", f"# Audit report: {d['original']['name']}", ""]
    verdict = d.get("verdict") or {}
    if verdict.get("releases"):
        lines += ["## Verdict: what each release keeps and loses", ""]
        for r in verdict["releases"]:
            lines += [f"### {_md_cell(r['label'])}: {r['headline']}", ""]
            lines += [f"- {'**' + t + '**' if kind == 'flag' else t}" for kind, t in verdict_lines(r)]
            lines.append("")
        for name, pts in (verdict.get("curves") or {}).items():
            lines.append(f"- privacy-utility, {name}: " + ", ".join(
                f"eps {fmt(e)} -> mean rel. error {fmt(err)}" for e, err in pts))
        lines += ["", f"*{verdict.get('legend', '')}*", ""]
    for note in d.get("notes", []):
        lines.append(f"- note: {note}")
    if d.get("notes"):
        lines.append("")
    for title, headers, rows, caption in _sections(d):
        lines += [f"## {title}", "", "| " + " | ".join(_md_cell(h) for h in headers) + " |",
                  "|" + "---|" * len(headers)]
        lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
        lines += ["", f"*{caption}*", ""]
    lines += ["## Legend", ""]
    lines += [f"- **{_md_cell(k)}**: {_md_cell(v)}" for k, v in _legend_rows(d)]
    lines += ["", "Plots (degree distribution, motifs, privacy-utility, attack ROC, empirical audit) are in the HTML "
              "report.", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------------- HTML
_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1200px;color:#222;
padding:0 1em}
.internal{background:#b00020;color:#fff;padding:.6em 1em;font-weight:bold;border-radius:4px}
table{border-collapse:collapse;margin:.5em 0 .3em 0;font-size:13px}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left}
td.num{text-align:right}
th{background:#f0f0f0}
td:first-child,th:first-child{text-align:left}
.caption{font-size:12px;color:#555;max-width:1100px;margin-bottom:1.5em}
.note{color:#8a5300}
figure{display:inline-block;margin:.5em 1em .5em 0}
figcaption{font-size:12px;color:#555;max-width:600px}
dt{font-weight:bold;font-size:12px} dd{font-size:12px;margin:0 0 .4em 1.5em}
#verdict{border:2px solid #333;border-radius:6px;padding:.2em 1em .5em 1em;margin-bottom:1.5em}
#verdict h3{margin:.6em 0 .2em 0;font-size:16px}
#verdict p{margin:.15em 0 .15em 1em;font-size:14px}
.headline{font-weight:normal;font-size:13px;padding:1px 6px;border-radius:3px;background:#eee}
p.flag{color:#fff;background:#b00020;font-weight:bold;padding:2px 6px;display:inline-block}
p.lost{color:#b00020} p.kept{color:#1b5e20} p.changed{color:#8a5300} p.privacy{color:#0d3c78}
"""


_NUMERIC = re.compile(r"^-?[\d,]*\.?\d+(e[+-]?\d+)?$")


def _td(cell: Any) -> str:
    text = str(cell)
    cls = ' class="num"' if _NUMERIC.match(text) else ""
    return f"<td{cls}>{html.escape(text)}</td>"


def _img(png: bytes | None, caption: str) -> str:
    if not png:
        return ""
    data = base64.b64encode(png).decode("ascii")
    return (f'<figure><img alt="{html.escape(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _verdict_html(verdict: dict[str, Any], make_plots: bool) -> list[str]:
    """The first section of the page: one block per release, then the privacy-utility curve and the thresholds."""
    if not verdict.get("releases"):
        return []
    e = html.escape
    parts = ['<section id="verdict"><h2>Verdict: what each release keeps and loses</h2>']
    for r in verdict["releases"]:
        parts.append(f'<div class="verdict-release"><h3>{e(r["label"])} '
                     f'<span class="headline">{e(r["headline"])}</span></h3>')
        parts += [f'<p class="{kind}">{e(text)}</p>' for kind, text in verdict_lines(r)]
        parts.append("</div>")
    curves = verdict.get("curves") or {}
    if curves and make_plots:
        parts.append(_img(plots.privacy_utility(curves),
                          "Privacy-utility: mean relative error of the Table 1 statistics (lower is better) against "
                          "the certified epsilon, one line per method audited at several epsilons."))
    elif curves:
        parts += [f"<p>privacy-utility, {e(name)}: " + e(", ".join(f"eps {fmt(x)} -> mean rel. error {fmt(y)}"
                                                                   for x, y in pts)) + "</p>"
                  for name, pts in curves.items()]
    parts.append(f'<p class="caption">{e(verdict.get("legend", ""))}</p></section>')
    return parts


def render_html(d: dict[str, Any], *, make_plots: bool = True) -> str:
    e = html.escape
    parts = [
        f"<!-- {e(INTERNAL_NOTICE)} -->",
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<link rel="icon" href="data:,">',
        f"<title>INTERNAL audit report: {e(d['original']['name'])}</title>",
        f"<style>{_CSS}</style></head><body>",
        f'<p class="internal">{e(INTERNAL_NOTICE)}</p>',
        f"<h1>Audit report: {e(d['original']['name'])}</h1>",
    ]
    parts += _verdict_html(d.get("verdict") or {}, make_plots)
    for note in d.get("notes", []):
        parts.append(f'<p class="note">note: {e(note)}</p>')
    for title, headers, rows, caption in _sections(d):
        parts.append(f"<h2>{e(title)}</h2><table><thead><tr>"
                     + "".join(f"<th>{e(str(h))}</th>" for h in headers) + "</tr></thead><tbody>")
        parts += ["<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in rows]
        parts.append(f'</tbody></table><p class="caption">{e(caption)}</p>')
    if make_plots:
        figs: list[tuple[Callable[[], bytes | None], str]] = [
            (lambda: plots.degree_ccdf(d.get("degree_histograms") or {}),
             "Degree distribution: share of nodes with degree >= k (log-log), original in black, one line per "
             "release (collections: all graphs pooled)."),
            (lambda: plots.motif_bars(d.get("motifs") or {}),
             "Graphlet proportions: each graphlet's count divided by the total count, original in black."),
            (lambda: plots.attack_roc(d.get("attacks") or {}),
             "Link-inference ROC: Adamic-Adar proximity in the release for original edges vs non-edges; the "
             "original graph itself (black) is the non-private reference."),
            (lambda: plots.empirical_bars(d.get("empirical") or []),
             "Empirical audit: lower bound on epsilon (left bar) beside the certified epsilon for the canary group "
             "(right bar)."),
        ]
        rendered = [_img(fn(), cap) for fn, cap in figs]
        if any(rendered):
            parts.append("<h2>Plots</h2>" + "".join(rendered))
    parts.append("<h2>Legend</h2><dl>")
    parts += [f"<dt>{e(k)}</dt><dd>{e(v)}</dd>" for k, v in _legend_rows(d)]
    parts.append("</dl></body></html>")
    return "\n".join(parts) + "\n"
