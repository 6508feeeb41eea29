"""The report as one self-contained HTML page: verdicts first, then one section per question.

The page works offline: styles, plots (inline SVG from :mod:`paradise.report.svg`)
and a small hover script are all inline, nothing is fetched. Headings ask the
reader's questions ("Can someone be picked out?"); the literature behind each
measure is cited in numbered footnotes at the end. Every figure is formatted
by :mod:`paradise.report.fmt`.

Example:
    >>> from paradise.report.figures import Comparison
    >>> page = render_comparison(Comparison("t", "duckdb", ()))
    >>> "<svg" in page and "http" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    True
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from paradise.report import fmt
from paradise.report.changes import DISTANCE, ColumnChange
from paradise.report.figures import Comparison, Report, RiskFigures, VariantPoint
from paradise.report.svg import COLOURS, Point, bar_chart, hbar_chart, scatter_chart
from paradise.report.verdict import (
    STATUS_TEXT,
    Verdict,
    comparison_verdicts,
    headline,
    verdicts,
)

__all__ = ["FIGURES", "SOURCES", "render_comparison", "render_report"]

FIGURES = ("class_sizes", "record_risk", "risk_vs_loss", "regression_coefficients")
_SIZE_BINS = ((1, 1), (2, 2), (3, 4), (5, 9), (10, 19), (20, 49), (50, 99), (100, None))

SOURCES = {
    "templ": "M. Templ, <i>Statistical Disclosure Control for Microdata</i>, Springer 2017: "
             "the risk–utility trade-off (p. 43), per-record risk (ch. 3), information loss "
             "and the eigenvalue measure (p. 140).",
    "k": "P. Samarati, L. Sweeney, <i>Protecting privacy when disclosing information: "
         "k-anonymity and its enforcement</i>, SRI technical report 1998.",
    "l": "A. Machanavajjhala et al., <i>l-Diversity: privacy beyond k-anonymity</i>, ACM TKDD "
         "1(1), 2007: distinct and entropy l-diversity.",
    "t": "N. Li, T. Li, S. Venkatasubramanian, <i>t-Closeness: privacy beyond k-anonymity and "
         "l-diversity</i>, ICDE 2007: earth mover's distance, ordered and equal.",
    "interval": "J. M. Mateo-Sanz, F. Sebé, J. Domingo-Ferrer, <i>Outlier protection in "
                "continuous microdata masking</i>, PSD 2004 (interval disclosure, sdcMicro "
                "<code>dRisk</code>); J. Domingo-Ferrer, V. Torra, <i>A quantitative comparison "
                "of disclosure control methods for microdata</i>, 2001 (rank intervals, "
                "distance-based record linkage).",
    "il1s": "W. E. Yancey, W. E. Winkler, R. H. Creecy, <i>Disclosure risk assessment in "
            "perturbative microdata protection</i>, 2002 (IL1s).",
    "slicing": "T. Li, N. Li, J. Zhang, I. Molloy, <i>Slicing: a new approach for privacy "
               "preserving data publishing</i>, IEEE TKDE 24(3), 2012; the claim that "
               "regressions within one column group are unchanged is from the PArADISE "
               "slicing paper (Grunert & Heuer, University of Rostock).",
}

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;padding:1.5em;
max-width:980px;color:#222;line-height:1.45}
h1{font-size:1.5em;margin:.2em 0}h2{font-size:1.2em;margin:1.6em 0 .4em;border-bottom:1px solid
#ddd;padding-bottom:.2em}h3{font-size:1.05em}
p.lead{color:#444;margin-top:0}
table{border-collapse:collapse;margin:.5em 0 1em;width:100%;table-layout:auto}
td,th{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top;
overflow-wrap:break-word}
th{background:#f5f5f5;font-weight:600}td.num{text-align:right}
.wide{overflow-x:auto;max-width:100%}
.status{font-weight:600;white-space:nowrap}.meets{color:#1a7f37}.fails{color:#b42318}
.info{color:#555}.n\\/a{color:#888}
figure{margin:1em 0}figcaption{font-size:.9em;color:#555;margin-top:.3em}
svg.chart{max-width:100%;height:auto;display:block}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;fill:#333}
svg .axis{stroke:#555}svg .grid{stroke:#eee}svg .marker{stroke:#555;stroke-dasharray:5 4}
svg .axis-title{fill:#444}svg .point{stroke:#fff;stroke-width:1.5;cursor:pointer}
svg .point:hover,svg .point:focus{stroke:#000;outline:none}
#tip{position:absolute;display:none;background:#222;color:#fff;padding:6px 9px;
border-radius:4px;font-size:.85em;white-space:pre;pointer-events:none;z-index:10;
max-width:420px}
.note{color:#555;font-size:.9em}sup a{text-decoration:none}
ol.sources{font-size:.85em;color:#444}
"""

_SCRIPT = """
(function(){
  var tip=document.getElementById('tip');
  function show(e){
    var el=e.currentTarget, r=el.getBoundingClientRect();
    tip.textContent=el.getAttribute('data-tip');
    tip.style.display='block';
    var x=window.scrollX+r.right+8, y=window.scrollY+r.top-4;
    var w=tip.offsetWidth;
    if(x+w>window.scrollX+document.documentElement.clientWidth-4){x=window.scrollX+r.left-w-8;}
    tip.style.left=Math.max(window.scrollX+4,x)+'px'; tip.style.top=y+'px';
  }
  function hide(){tip.style.display='none';}
  var els=document.querySelectorAll('[data-tip]');
  for(var i=0;i<els.length;i++){
    els[i].addEventListener('mouseenter',show);els[i].addEventListener('focus',show);
    els[i].addEventListener('mouseleave',hide);els[i].addEventListener('blur',hide);
  }
})();
"""


class _Notes:
    """Footnote numbering in order of first citation."""

    def __init__(self) -> None:
        self.order: list[str] = []

    def cite(self, *keys: str) -> str:
        marks = []
        for key in keys:
            if key not in self.order:
                self.order.append(key)
            n = self.order.index(key) + 1
            marks.append(f'<a href="#source-{n}" id="cite-{key}-{n}">{n}</a>')
        return "<sup>" + ",".join(marks) + "</sup>"

    def render(self) -> str:
        if not self.order:
            return ""
        items = "".join(f'<li id="source-{i + 1}">{SOURCES[k]}</li>'
                        for i, k in enumerate(self.order))
        return f"<h2>Sources</h2><ol class='sources'>{items}</ol>"


def _e(text: Any) -> str:
    return html.escape(str(text))


def _table(header: Sequence[str], rows: Sequence[Sequence[Any]],
           numeric: Sequence[int] = ()) -> str:
    """A table of already formatted cells; columns in ``numeric`` are right-aligned."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(
            f"<td class='num'>{_e(v)}</td>" if j in numeric else f"<td>{_e(v)}</td>"
            for j, v in enumerate(row)) + "</tr>"
        for row in rows)
    return f"<div class='wide'><table><tr>{head}</tr>{body}</table></div>"


def _figure(name: str, svg: str, caption: str) -> str:
    return f'<figure id="fig-{name}">{svg}<figcaption>{caption}</figcaption></figure>'


def _verdict_table(items: Sequence[Verdict], what: str = "figure") -> str:
    rows = "".join(
        f"<tr><td class='status {v.status}'>{_e(STATUS_TEXT[v.status])}</td>"
        f"<td>{_e(v.figure)}</td><td>{_e(v.value)}</td><td>{_e(v.why)}</td></tr>"
        for v in items)
    return ("<div class='wide'><table class='verdicts'><colgroup>"
            "<col style='width:15%'><col style='width:27%'>"
            "<col style='width:18%'><col style='width:40%'></colgroup>"
            f"<tr><th>verdict</th><th>{_e(what)}</th><th>value</th>"
            f"<th>why</th></tr>{rows}</table></div>")


# --- charts ---------------------------------------------------------------------------------
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


def _k_position(k: int) -> float:
    """Where the policy's k falls on the binned x axis (the left edge of its bin)."""
    for i, (lo, hi) in enumerate(_SIZE_BINS):
        if k >= lo and (hi is None or k <= hi):
            return float(i) if k == lo else i + 0.5
    return 0.0


def _class_size_chart(report: Report) -> str:
    labels = [f"{lo}" if lo == hi else (f"{lo}+" if hi is None else f"{lo}–{hi}")
              for lo, hi in _SIZE_BINS]
    _n, before = _worst(report.risk_original)
    _n, after = _worst(report.risk_anonymized)
    k = int(report.policy.get("k") or 1)
    return bar_chart(
        labels,
        [("original", _size_bins(before), COLOURS[0]),
         ("anonymized", _size_bins(after), COLOURS[1])],
        "size of the group of look-alike records (records sharing all quasi-identifiers)",
        "records",
        title="Records by the size of their group",
        marker=(_k_position(k), f"policy k = {k}") if k > 1 else None,
        value_label=fmt.tick,
        tip=lambda s, c, v: f"{s}: {fmt.count(v)} records in groups of {c}",
    )


def _risk_chart(report: Report) -> str:
    _n, before = _worst(report.risk_original)
    _n, after = _worst(report.risk_anonymized)
    bins = 10
    labels = [f"{i * 10}–{(i + 1) * 10}%" for i in range(bins)]

    def counts(summary: Any) -> list[int]:
        return [c for *_x, c in summary.risk_histogram(bins)] if summary else [0] * bins

    return bar_chart(
        labels,
        [("original", counts(before), COLOURS[0]), ("anonymized", counts(after), COLOURS[1])],
        "chance to re-identify the record (1 / size of its group)", "records",
        title="Records by their re-identification risk", value_label=fmt.tick,
        tip=lambda s, c, v: f"{s}: {fmt.count(v)} records with a risk of {c}",
    )


def _point_details(p: VariantPoint) -> tuple[str, ...]:
    lines = [f"k: {fmt.count(p.k)}" + (f" (policy asks {p.policy_k})" if p.policy_k else ""),
             f"unique records: {fmt.count(p.sample_uniques)}",
             f"mean risk: {fmt.odds(p.mean_risk)} ({fmt.share(p.mean_risk)})"]
    if p.interval_risk is not None:
        lines.append(f"interval disclosure: {fmt.share(p.interval_risk)}")
    if p.linkage_risk is not None:
        lines.append(f"record linkage: {fmt.share(p.linkage_risk)}")
    lines.append(f"IL1s: {fmt.loss(p.il1s)}; eigenvalue loss: {fmt.loss(p.eigen_loss)}")
    if p.source and p.source not in ("this report", "original data", "variant"):
        lines.append(f"policies: {p.source}")
    return tuple(lines)


def _tradeoff_chart(points: Sequence[VariantPoint], attr: str, y_title: str) -> str:
    pts = []
    for i, p in enumerate(points):
        y = getattr(p, attr)
        if y is None or (isinstance(y, float) and not math.isfinite(y)) or p.mean_risk <= 0:
            continue
        original = p.label == "original"
        pts.append(Point(p.mean_risk, float(y), p.label,
                         "#555" if original else COLOURS[(i - 1) % len(COLOURS)],
                         _point_details(p), "square" if original else "circle"))
    return scatter_chart(
        pts, "disclosure risk: mean chance to re-identify a record (log scale)", y_title,
        title=f"{y_title} against disclosure risk", x_label=lambda v: fmt.tick(v, percent=True),
        y_label=fmt.tick,
        log_x=True)


def _slopes_chart(report: Report) -> str:
    colours = {"model": COLOURS[0], "within_group": COLOURS[2], "across_groups": COLOURS[1]}
    labels, values, cols, tips = [], [], [], []
    for r in report.regressions:
        for term, o, a in zip(r.terms[1:], r.original[1:], r.anonymized[1:], strict=True):
            if not (math.isfinite(o) and math.isfinite(a)):
                continue
            rel = abs(a - o) / abs(o) if o else (0.0 if a == o else math.inf)
            if not math.isfinite(rel):
                continue
            labels.append(f"{term} → {r.target}")
            values.append(rel)
            cols.append(colours.get(r.kind, COLOURS[3]))
            tips.append(f"{r.target} ~ {' + '.join(r.predictors)} ({r.kind.replace('_', ' ')})\n"
                        f"slope of {term}: {fmt.number(o)} → {fmt.number(a)} "
                        f"({fmt.share(rel)} change)")
            if len(labels) >= 16:
                break
    return hbar_chart(
        labels, values, cols, "relative change of the slope (0% = unchanged)",
        title="Change of each regression slope", value_label=fmt.share,
        tick_label=lambda v: fmt.tick(v, percent=True),
        legend=[("main model", COLOURS[0]), ("within a column group", COLOURS[2]),
                ("across column groups", COLOURS[1])], tips=tips)


# --- sections -------------------------------------------------------------------------------
def _change_cells(c: ColumnChange) -> list[str]:
    if c.kind == "numeric":
        distance = fmt.loss(c.distance)
    elif c.kind == "temporal":
        distance = fmt.days(c.distance)
    elif c.kind == "categorical":
        distance = fmt.share(c.distance)
    elif c.kind == "boolean":
        distance = fmt.delta_share(c.distance)
    else:
        distance = f"{fmt.count(c.distinct_before)} → {fmt.count(c.distinct_after)}"
    return [c.column, c.kind, DISTANCE[c.kind], distance,
            fmt.share(c.changed) if c.changed is not None else fmt.DASH,
            fmt.share(c.blanked) if c.blanked is not None else fmt.DASH]


def _risk_section(report: Report, notes: _Notes) -> list[str]:
    need = int(report.policy.get("k") or 1)
    out = [f"<h2>Can someone be picked out?{notes.cite('k', 'templ')}</h2>",
           "<p>Someone who knows a person's quasi-identifiers ("
           f"{_e(', '.join(report.quasi_identifiers) or 'none')}) looks for records that "
           "match. The fewer records share a combination, the likelier the right one is "
           "found: a record in a group of <i>f</i> look-alikes is re-identified with a chance "
           "of 1 in <i>f</i>.</p>"]
    rows = [["original, all quasi-identifiers", fmt.count(u.summary.classes),
             fmt.count(u.summary.k), fmt.count(u.summary.sample_uniques),
             fmt.odds(u.summary.mean_risk), fmt.count(u.summary.records_below(need))]
            for u in report.risk_original.units]
    rows += [[f"anonymized: {', '.join(u.quasi_identifiers)}", fmt.count(u.summary.classes),
              fmt.count(u.summary.k), fmt.count(u.summary.sample_uniques),
              fmt.odds(u.summary.mean_risk), fmt.count(u.summary.records_below(need))]
             for u in report.risk_anonymized.units]
    out.append(_table(["data (grouped by)", "groups", "smallest group", "unique records",
                       "mean risk", f"records in groups below {need}"], rows, (1, 2, 3, 4, 5)))
    if len(report.risk_anonymized.units) > 1:
        out.append("<p class='note'>The table is sliced: each column group is released "
                   "separately, so groups are counted per column group; the charts show the "
                   "group with the highest risk.</p>")
    out.append(_figure("class_sizes", _class_size_chart(report),
                       "Records by the size of their group of look-alikes, before and after "
                       "anonymization. Records left of the dashed line are in groups smaller "
                       "than the policy's k; records whose quasi-identifiers are all blanked "
                       "belong to no group and are not counted. Hover a bar for its count."))
    out.append(_figure("record_risk", _risk_chart(report),
                       "Records by their chance to be re-identified (1 / group size). "
                       "Anonymization should move records to the left."))
    return out


def _sensitive_section(report: Report, notes: _Notes) -> list[str]:
    if not report.sensitive_figures:
        return []
    out = [f"<h2>Can someone's sensitive value be learned?{notes.cite('l', 't')}</h2>",
           "<p>Even in a large group, if everyone shares the same sensitive value, finding "
           "the group reveals it. <b>Different values</b> is the fewest distinct sensitive "
           "values in any group (distinct l); <b>effective values</b> weighs them by "
           "frequency (entropy l); <b>distance from the table</b> is how far a group's values "
           "stray from the whole table's (t, 0 to 1).</p>"]
    out.append(_table(
        ["data", "sensitive column", "groups by", "different values", "effective values",
         "distance from the table"],
        [[s.data, s.column, ", ".join(s.quasi_identifiers), fmt.count(s.distinct_l),
          fmt.number(s.entropy_l), fmt.loss(s.t)] for s in report.sensitive_figures],
        (3, 4, 5)))
    return out


def _perturbation_section(report: Report, notes: _Notes) -> list[str]:
    out = [f"<h2>Can changed numbers be traced back?{notes.cite('interval')}</h2>"]
    if not report.interval:
        out.append("<p>This policy changes no numeric value (it may move, group or blank "
                   "them), so there is nothing to trace back.</p>")
        return out
    out.append("<p>For the numbers the policy changes: how often the true value lies close "
               "to the released one (±5% of a standard deviation, or ±1% of the ranks), and "
               "how often a released record's nearest original record is its own.</p>")
    out.append(_table(
        ["columns", "within ±5% of an sd", "within ±1% of ranks", "linked to own record"],
        [[", ".join(i.per_column), fmt.share(i.risk), fmt.share(r.risk), fmt.share(lk.risk)]
         for i, r, lk in zip(report.interval, report.interval_rank, report.linkage,
                             strict=True)], (1, 2, 3)))
    return out


def _loss_section(report: Report, notes: _Notes) -> list[str]:
    u = report.utility
    out = [f"<h2>How much did each column change?{notes.cite('il1s')}</h2>",
           "<p>Each column is compared the way its kind allows; <b>changed</b> and "
           "<b>blanked</b> count records whose released value differs from, or hides, their "
           "own original.</p>"]
    out.append(_table(["column", "kind", "compared by", "change", "records changed",
                       "records blanked"],
                      [_change_cells(c) for c in report.column_changes], (3, 4, 5)))
    if u.moments:
        il1s = u.il1s.per_column if u.il1s else {}
        out.append("<h3>Numbers: averages and spread</h3>")
        out.append(_table(
            ["column", "mean before", "mean after", "change", "variance change", "IL1s"],
            [[m.column, fmt.number(m.mean), fmt.number(m.mean_anonymized),
              fmt.change(m.mean_change), fmt.change(m.variance_change),
              fmt.loss(il1s.get(m.column))] for m in u.moments], (1, 2, 3, 4, 5)))
        out.append(f"<p>Correlations between the numeric columns: eigenvalue loss "
                   f"{fmt.loss(u.eigen_loss)}{notes.cite('templ')}, largest change of one "
                   f"correlation {fmt.loss(u.max_correlation_change)}.</p>")
    return out


def _tradeoff_section(points: Sequence[VariantPoint], notes: _Notes) -> list[str]:
    out = [f"<h2>Protection against cost: how other policies compare{notes.cite('templ')}</h2>",
           "<p>Each policy is a point: further left protects people better, lower keeps the "
           "data more useful. The square is the original data. Hover or focus a point for "
           "all its figures.</p>"]
    out.append(_figure("risk_vs_loss", _tradeoff_chart(points, "il1s", "information loss "
                                                       "(IL1s)"),
                       "Mean re-identification risk against IL1s, the mean change of the "
                       "numbers. Policies that only move values (slicing) score 0 here; see "
                       "the correlation plot below."))
    out.append(_figure("risk_vs_eigen", _tradeoff_chart(points, "eigen_loss",
                                                        "correlation loss (eigenvalues)"),
                       "Mean re-identification risk against the eigenvalue loss, how much "
                       "the correlations between numeric columns changed."))
    verdict = {id(p): v for p, v in zip(points, comparison_verdicts(points), strict=True)}
    out.append(_table(
        ["policy", "smallest group", "verdict", "unique records", "mean risk",
         "interval disclosure", "record linkage", "IL1s", "eigenvalue loss"],
        [[p.label, fmt.count(p.k), STATUS_TEXT[verdict[id(p)].status],
          fmt.count(p.sample_uniques), fmt.odds(p.mean_risk),
          fmt.share(p.interval_risk) if p.interval_risk is not None else fmt.DASH,
          fmt.share(p.linkage_risk) if p.linkage_risk is not None else fmt.DASH,
          fmt.loss(p.il1s), fmt.loss(p.eigen_loss)] for p in points],
        (1, 3, 4, 5, 6, 7, 8)))
    return out


def _analyses_section(report: Report, notes: _Notes) -> list[str]:
    out = ["<h2>Do analyses still give the same answers?</h2>"]
    if report.regressions:
        out.append(_figure("regression_coefficients", _slopes_chart(report),
                           "How much each slope changes when the same linear model is fitted "
                           "on the anonymized instead of the original data. Hover a bar for "
                           "both values."))
        out.append(_table(
            ["model", "kind", "largest slope change", "records used (before / after)"],
            [[f"{r.target} ~ {' + '.join(r.predictors)}", r.kind.replace("_", " "),
              fmt.share(r.max_rel_delta) if math.isfinite(r.max_rel_delta) else fmt.DASH,
              f"{fmt.count(r.rows)} / {fmt.count(r.rows_anonymized)}"]
             for r in report.regressions], (2, 3)))
    if report.slicing_check.applies:
        out.append(f"<p><b>Slicing keeps analyses within a column group</b>"
                   f"{notes.cite('slicing')}: {_e(report.slicing_check.verdict)}.</p>")
    c = report.classifier
    if c is not None:
        out.append(_table(
            ["predicting", "trained on original", "trained on anonymized",
             "always the most common value", "records (train / test)"],
            [[c.target, fmt.share(c.accuracy_original), fmt.share(c.accuracy_anonymized),
              fmt.share(c.majority_baseline),
              f"{fmt.count(c.train_rows)} / {fmt.count(c.test_rows)}"]], (1, 2, 3, 4)))
        out.append("<p class='note'>A logistic regression for the sensitive column, tested "
                   "on the same 30% of original records both times.</p>")
    return out


def _page(title: str, body: Sequence[str]) -> str:
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
            + "\n".join(body) + f"<div id='tip' role='tooltip'></div><script>{_SCRIPT}</script>"
            "</body></html>")


def render_report(report: Report) -> str:
    """The whole report as one HTML document (no external resources)."""
    notes = _Notes()
    title = f"How well does {report.table} protect people, as role {report.role} sees it?"
    body = [f"<h1>{_e(title)}</h1>", f"<p class='lead'>{_e(headline(report))}. "
            f"Verification of the release: {_e(report.verification)}.</p>",
            "<h2>At a glance</h2>", _verdict_table(verdicts(report))]
    body += _risk_section(report, notes)
    body += _sensitive_section(report, notes)
    body += _perturbation_section(report, notes)
    body += _loss_section(report, notes)
    if len(report.variants) > 2:
        body += _tradeoff_section(report.variants, notes)
    else:
        body.append("<h2>Protection against cost</h2>")
        body.append(_figure("risk_vs_loss", _tradeoff_chart(report.variants, "il1s",
                                                            "information loss (IL1s)"),
                            "This policy against the original data; run with --variants or "
                            "--compare to place other policies on the same plot. Hover a "
                            "point for its figures."))
    body += _analyses_section(report, notes)
    if report.skipped:
        body.append("<h2>What was not measured, and why</h2><ul>" + "".join(
            f"<li><b>{_e(m)}</b>: {_e(why)}</li>" for m, why in report.skipped) + "</ul>")
    kinds = ", ".join(f"{p.name} ({p.kind})" for p in report.profiles)
    body.append("<h2>How this was measured</h2><ul>" + "".join(
        f"<li class='note'>{_e(n)}</li>" for n in (f"column kinds: {kinds}.", *report.notes))
        + "</ul>")
    body.append(notes.render())
    return _page(title, body)


def render_comparison(comparison: Comparison) -> str:
    """The risk-utility plot of several policies as one HTML document."""
    notes = _Notes()
    title = f"Policies compared on {comparison.table}"
    body = [f"<h1>{_e(title)}</h1>",
            "<h2>At a glance</h2>", _verdict_table(comparison_verdicts(comparison), "policy")]
    body += _tradeoff_section(comparison.variants, notes)
    if comparison.notes:
        body.append("<h2>How this was measured</h2><ul>" + "".join(
            f"<li class='note'>{_e(n)}</li>" for n in comparison.notes) + "</ul>")
    body.append(notes.render())
    return _page(title, body)
