"""A self-contained HTML report: tables plus matplotlib plots embedded as base64 PNG.

Four figures (seed 003 §2.2, §6.1.4; Templ 2017, p. 43):

- class-size histogram: records by the size ``f_k`` of their equivalence class,
  original vs anonymized (the unit with the highest mean risk);
- per-record risk distribution: records by ``1/f_k``;
- risk vs loss: each policy variant as a point (mean per-record risk against
  IL1s and against the eigenvalue loss), the original data at (risk, 0) —
  Templ's trade-off plot;
- regression coefficients before/after: each slope on the original against the
  anonymized data; the diagonal is "unchanged".

Example:
    >>> "<img" in render_comparison(Comparison("t", "duckdb", ()))
    True
"""

from __future__ import annotations

import base64
import html
import io
import math
from collections.abc import Sequence
from typing import Any

from paradise.report.run import Comparison, Report, RiskFigures, VariantPoint

__all__ = ["FIGURES", "figure_pngs", "render_comparison", "render_report"]

FIGURES = ("class_sizes", "record_risk", "risk_vs_loss", "regression_coefficients")
_SIZE_BINS = ((1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, None))


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    _plt().close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _worst(risk: RiskFigures) -> tuple[str, Any]:
    if risk.worst_unit is None or not risk.units:
        return "no classes", None
    unit = risk.units[risk.worst_unit]
    return ", ".join(unit.quasi_identifiers), unit.summary


def _size_bins(summary: Any) -> list[int]:
    out = [0] * len(_SIZE_BINS)
    if summary is None:
        return out
    for f, n in summary.sizes:
        for i, (lo, hi) in enumerate(_SIZE_BINS):
            if f >= lo and (hi is None or f <= hi):
                out[i] += f * n
    return out


def _class_size_figure(report: Report) -> str:
    plt = _plt()
    labels = [f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}-{hi}")
              for lo, hi in _SIZE_BINS]
    name_o, before = _worst(report.risk_original)
    name_a, after = _worst(report.risk_anonymized)
    fig, ax = plt.subplots(figsize=(7, 3.4))
    xs = range(len(labels))
    ax.bar([x - 0.2 for x in xs], _size_bins(before), width=0.4, label="original")
    ax.bar([x + 0.2 for x in xs], _size_bins(after), width=0.4, label="anonymized")
    ax.set_xticks(list(xs), labels)
    ax.set_xlabel("class size f_k")
    ax.set_ylabel("records")
    ax.set_title(f"Class sizes (anonymized: unit {name_a})", fontsize=10)
    ax.axvline(_bin_of(report.policy.get("k", 1)) - 0.5, color="grey", ls="--", lw=1)
    ax.legend()
    return _png(fig)


def _bin_of(k: int) -> int:
    for i, (lo, hi) in enumerate(_SIZE_BINS):
        if k >= lo and (hi is None or k <= hi):
            return i
    return 0


def _risk_figure(report: Report) -> str:
    plt = _plt()
    _n, before = _worst(report.risk_original)
    _n, after = _worst(report.risk_anonymized)
    fig, ax = plt.subplots(figsize=(7, 3.4))
    for summary, label, shift in ((before, "original", -0.02), (after, "anonymized", 0.02)):
        if summary is None:
            continue
        hist = summary.risk_histogram(10)
        ax.bar([(lo + hi) / 2 + shift for lo, hi, _c in hist], [c for *_x, c in hist],
               width=0.04, label=label)
    ax.set_yscale("symlog")
    ax.set_xlabel("per-record risk 1/f_k")
    ax.set_ylabel("records")
    ax.set_xlim(0, 1.05)
    ax.set_title("Per-record re-identification risk", fontsize=10)
    ax.legend()
    return _png(fig)


def _tradeoff_figure(points: Sequence[VariantPoint]) -> str:
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for ax, attr, label in ((axes[0], "il1s", "IL1s"), (axes[1], "eigen_loss", "eigenvalue loss")):
        for p in points:
            y = getattr(p, attr)
            if y is None or (isinstance(y, float) and math.isnan(y)):
                continue
            marker = "s" if p.label == "original" else "o"
            ax.scatter(p.mean_risk, y, marker=marker, s=45)
            ax.annotate(p.label, (p.mean_risk, y), textcoords="offset points", xytext=(4, 4),
                        fontsize=8)
        ax.set_xlabel("disclosure risk: mean per-record risk 1/f_k (worst unit)")
        ax.set_ylabel(f"information loss: {label}")
        ax.grid(alpha=0.3)
    fig.suptitle("Risk vs information loss (Templ 2017, p. 43)", fontsize=10)
    return _png(fig)


def _regression_figure(report: Report) -> str:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    colours = {"model": "C0", "within_group": "C2", "across_groups": "C3"}
    seen: set[str] = set()
    lo, hi = 0.0, 0.0
    for r in report.regressions:
        for o, a in zip(r.original[1:], r.anonymized[1:], strict=True):
            if math.isnan(o) or math.isnan(a):
                continue
            label = r.kind.replace("_", " ") if r.kind not in seen else None
            seen.add(r.kind)
            ax.scatter(o, a, color=colours.get(r.kind, "C1"), s=25, label=label)
            lo, hi = min(lo, o, a), max(hi, o, a)
    ax.plot([lo, hi], [lo, hi], color="grey", lw=1, ls="--")
    ax.set_xscale("symlog", linthresh=1e-3)
    ax.set_yscale("symlog", linthresh=1e-3)
    ax.set_xlabel("coefficient, original data")
    ax.set_ylabel("coefficient, anonymized data")
    ax.set_title("Regression slopes before/after (diagonal: unchanged)", fontsize=10)
    if seen:
        ax.legend(fontsize=8)
    return _png(fig)


def figure_pngs(report: Report) -> dict[str, str]:
    """The report's four figures as base64 PNG, keyed by :data:`FIGURES`."""
    return {
        "class_sizes": _class_size_figure(report),
        "record_risk": _risk_figure(report),
        "risk_vs_loss": _tradeoff_figure(report.variants),
        "regression_coefficients": _regression_figure(report),
    }


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;
text-align:right}th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}
figure{margin:1em 0}figcaption{font-size:.9em;color:#555}.note{color:#555;font-size:.9em}
"""


def _fmt(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        return f"{v:.4g}"
    return html.escape(str(v))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(v)}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _img(name: str, data: str, caption: str) -> str:
    return (f'<figure id="fig-{name}"><img alt="{name}" src="data:image/png;base64,{data}">'
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def _points_table(points: Sequence[VariantPoint]) -> str:
    return _table(
        ["policy", "k", "sample uniques", "mean risk", "interval risk", "linkage risk", "IL1s",
         "eigen loss"],
        [[p.label, p.k, p.sample_uniques, p.mean_risk, p.interval_risk, p.linkage_risk, p.il1s,
          p.eigen_loss] for p in points],
    )


def render_report(report: Report) -> str:
    """The whole report as one HTML document (no external resources)."""
    figs = figure_pngs(report)
    title = f"paradise report: {report.table} for role {report.role}"
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
             f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"]
    ops = ", ".join(o["operator"] for o in report.policy.get("operators", [])) or "none"
    parts.append(
        f"<p>{report.rows} rows on {html.escape(report.backend)}. Policy: k = "
        f"{_fmt(report.policy.get('k'))}, l = {_fmt(report.policy.get('l'))}, on_violation "
        f"{_fmt(report.policy.get('on_violation'))}; operators: {html.escape(ops)}. "
        f"Verification: {html.escape(report.verification)}.</p>"
    )
    parts.append("<h2>Summary</h2>")
    summary = report.summary()
    parts.append(_table(["figure", "value"], [[k, v] for k, v in summary.items()]))
    parts.append("<h2>Disclosure risk (seed 003 §2.4–2.6)</h2>")
    rows = [["original (all quasi-identifiers)", u.summary.classes, u.summary.k,
             u.summary.sample_uniques, u.summary.mean_risk, u.summary.records_below(
                 int(report.policy.get("k") or 1))] for u in report.risk_original.units]
    rows += [[f"anonymized: {', '.join(u.quasi_identifiers)}", u.summary.classes, u.summary.k,
              u.summary.sample_uniques, u.summary.mean_risk,
              u.summary.records_below(int(report.policy.get("k") or 1))]
             for u in report.risk_anonymized.units]
    parts.append(_table(["data / unit", "classes", "k", "sample uniques", "mean risk",
                         "records below policy k"], rows))
    parts.append(_img("class_sizes", figs["class_sizes"],
                      "Records by the size of their equivalence class; dashed: the policy's k."))
    parts.append(_img("record_risk", figs["record_risk"],
                      "Records by per-record risk 1/f_k (symmetric log scale)."))
    parts.append("<h3>l-diversity and t-closeness</h3>")
    parts.append(_table(
        ["data", "sensitive", "classes by", "distinct l", "entropy l", "t", "EMD"],
        [[s.data, s.column, ", ".join(s.quasi_identifiers), s.distinct_l, s.entropy_l, s.t,
          s.t_method] for s in report.sensitive_figures],
    ))
    parts.append("<h3>Perturbed numeric columns</h3>")
    if report.interval:
        parts.append(_table(
            ["columns", "interval (sd, k=0.05)", "interval (rank, 1%)", "record linkage"],
            [[", ".join(i.per_column), i.risk, r.risk, lk.risk]
             for i, r, lk in zip(report.interval, report.interval_rank, report.linkage,
                                 strict=True)],
        ))
    else:
        parts.append("<p>No numeric value is changed by this policy: interval disclosure and "
                     "record linkage do not apply.</p>")
    parts.append("<h2>Information loss (seed 003 §2.7)</h2>")
    u = report.utility
    parts.append(f"<p>IL1s {_fmt(u.il1s.value if u.il1s else None)}, eigenvalue loss "
                 f"{_fmt(u.eigen_loss)}, largest correlation change "
                 f"{_fmt(u.max_correlation_change)}.</p>")
    parts.append(_table(
        ["column", "mean", "mean anon.", "variance", "variance anon.", "IL1s term"],
        [[m.column, m.mean, m.mean_anonymized, m.variance, m.variance_anonymized,
          (u.il1s.per_column.get(m.column) if u.il1s else None)] for m in u.moments],
    ))
    parts.append(_img("risk_vs_loss", figs["risk_vs_loss"],
                      "Each policy variant: risk against loss; lower left is better."))
    parts.append(_points_table(report.variants))
    parts.append("<h2>Analyses: regressions and a classifier</h2>")
    parts.append(_img("regression_coefficients", figs["regression_coefficients"],
                      "Slopes on original vs anonymized data."))
    parts.append(_table(
        ["kind", "model", "largest |Δ slope|", "largest relative Δ", "rows", "rows anon."],
        [[r.kind, f"{r.target} ~ {' + '.join(r.predictors)}", r.max_abs_delta, r.max_rel_delta,
          r.rows, r.rows_anonymized] for r in report.regressions],
    ))
    parts.append(f"<p><b>Seed 004 §5.2</b> (regressions within one slicing group are "
                 f"unaffected): {html.escape(report.slicing_check.verdict)}.</p>")
    c = report.classifier
    if c is not None:
        parts.append(_table(
            ["classifier", "accuracy (trained on original)", "accuracy (trained on anonymized)",
             "majority baseline"],
            [[f"logistic regression for {c.target}", c.accuracy_original, c.accuracy_anonymized,
              c.majority_baseline]],
        ))
    parts.append("<h2>Notes</h2><ul>" + "".join(
        f"<li class='note'>{html.escape(n)}</li>" for n in report.notes) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts)


def render_comparison(comparison: Comparison) -> str:
    """The risk-utility plot of several policies as one HTML document."""
    title = f"paradise report: policies compared on {comparison.table}"
    fig = _tradeoff_figure(comparison.variants)
    notes = "".join(f"<li class='note'>{html.escape(n)}</li>" for n in comparison.notes)
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}"
            f"</title><style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
            + _img("risk_vs_loss", fig, "Each policy: risk against loss; lower left is better.")
            + _points_table(comparison.variants) + f"<ul>{notes}</ul></body></html>")
