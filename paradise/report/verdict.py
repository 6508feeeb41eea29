"""One verdict per figure: does the release meet the policy, and why (or why it cannot say).

The policy bounds some figures (k, and l where it sets one); for those the
verdict is ``meets`` or ``fails`` with the reason in numbers. The other
figures have no limit in the policy; their verdict is ``info`` with what the
number means in the reader's terms, or ``n/a`` with why it was not measured.
Every value is formatted (:mod:`paradise.report.fmt`): no raw floats.

Example:
    >>> import paradise
    >>> from paradise.report import build_report
    >>> proc = paradise.connect(":memory:")
    >>> from paradise.tools.demo_data import load_demo
    >>> load_demo(proc)
    >>> v = {x.key: x for x in verdicts(build_report(proc, role="public", table="adult",
    ...                                              variants=()))}
    >>> v["k"].status, v["k"].why.endswith("the policy asks for 10")
    ('meets', True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from paradise.report import fmt
from paradise.report.figures import Comparison, Report, VariantPoint

__all__ = ["STATUS_TEXT", "Verdict", "comparison_verdicts", "summary_text", "verdicts"]

STATUS_TEXT = {
    "meets": "meets the policy",
    "fails": "does not meet the policy",
    "info": "no limit in the policy",
    "n/a": "not measured",
}


@dataclass(frozen=True)
class Verdict:
    """One line of the summary.

    Attributes:
        key: a stable name (``k``, ``uniques``, ``risk``, ``l``, ``t``, ``interval``,
            ``linkage``, ``blanked``, ``il1s``, ``eigen``, ``regression``, ``classifier``,
            ``slicing``).
        figure: what is measured, in the reader's words.
        value: the formatted figure.
        status: ``meets``, ``fails``, ``info`` or ``n/a``.
        why: one sentence with the reason.
    """

    key: str
    figure: str
    value: str
    status: str
    why: str


def _qis(report: Report) -> str:
    return ", ".join(report.quasi_identifiers) or "no quasi-identifier"


def _k_verdict(report: Report) -> Verdict:
    need = int(report.policy.get("k") or 1)
    risk = report.risk_anonymized
    sliced = len(risk.units) > 1
    scope = "within each column group" if sliced else f"of {_qis(report)}"
    if risk.k is None:
        return Verdict("k", "Smallest group of look-alike records", fmt.DASH, "meets",
                       "no record keeps a quasi-identifier value, so no one can be singled out "
                       "by them")
    value = f"{fmt.count(risk.k)} record" + ("" if risk.k == 1 else "s")
    if risk.k >= need:
        return Verdict("k", "Smallest group of look-alike records", value, "meets",
                       f"every combination {scope} is shared by at least {risk.k} records; "
                       f"the policy asks for {need}")
    below = max(u.summary.records_below(need) for u in risk.units)
    action = {
        "report": "the policy releases them anyway (on violation: report)",
        "refuse": "the policy refuses answers that contain them (on violation: refuse)",
        "suppress": "suppression did not remove them",
    }.get(str(report.policy.get("on_violation")), "")
    return Verdict("k", "Smallest group of look-alike records", value, "fails",
                   f"{fmt.count(below)} records ({fmt.share(below / max(report.rows, 1))}) are "
                   f"in groups smaller than {need} {scope}; {action}")


def _uniques_verdict(report: Report) -> Verdict:
    risk = report.risk_anonymized
    need = int(report.policy.get("k") or 1)
    n = risk.sample_uniques
    value = f"{fmt.count(n)} ({fmt.share(n / max(report.rows, 1))})"
    if need < 2:
        return Verdict("uniques", "Records unique on their quasi-identifiers", value, "info",
                       "the policy allows unique records (k = 1)")
    if n == 0:
        return Verdict("uniques", "Records unique on their quasi-identifiers", value, "meets",
                       "no record is alone in its group")
    return Verdict("uniques", "Records unique on their quasi-identifiers", value, "fails",
                   f"{fmt.count(n)} records can be singled out by {_qis(report)}; the policy "
                   f"asks for groups of {need}")


def _risk_verdict(report: Report) -> Verdict:
    risk = report.risk_anonymized
    need = int(report.policy.get("k") or 1)
    value = f"{fmt.odds(risk.mean_risk)} on average, at most {fmt.odds(risk.max_risk)}"
    if risk.k is None:
        return Verdict("risk", "Chance to re-identify a person who is in the data", "none",
                       "meets", "no quasi-identifier value is released")
    status = "meets" if risk.max_risk <= 1.0 / need + 1e-12 else "fails"
    return Verdict("risk", "Chance to re-identify a person who is in the data", value, status,
                   f"someone who knows a person's {_qis(report)} picks the right record with "
                   f"this chance; the policy's k = {need} caps it at {fmt.odds(1.0 / need)}")


def _l_verdicts(report: Report) -> list[Verdict]:
    need = report.policy.get("l")
    sens = [s for s in report.sensitive_figures if s.data == "anonymized"]
    out = []
    for column in dict.fromkeys(s.column for s in sens):
        values = [s.distinct_l for s in sens if s.column == column and s.distinct_l is not None]
        figure = f"Different {column} values in every group"
        if not values:
            out.append(Verdict("l", figure, fmt.DASH, "n/a", "no group keeps a value"))
            continue
        low = min(values)
        value = f"at least {fmt.count(low)}"
        if need is None:
            out.append(Verdict("l", figure, value, "info",
                               f"the policy sets no l; with l = 1 a group's {column} can be "
                               "read off"))
        elif low >= need:
            out.append(Verdict("l", figure, value, "meets",
                               f"every group has at least {low} different values; the policy "
                               f"asks for {need}"))
        else:
            out.append(Verdict("l", figure, value, "fails",
                               f"some group has only {low} different value"
                               + ("" if low == 1 else "s") + f"; the policy asks for {need}"))
    return out


def _t_verdict(report: Report) -> Verdict | None:
    sens = [s for s in report.sensitive_figures if s.data == "anonymized" and s.t is not None]
    if not sens:
        return None
    worst = max(sens, key=lambda s: s.t or 0.0)
    return Verdict("t", "How far a group's sensitive values stray from the whole table",
                   fmt.loss(worst.t), "info",
                   f"worst for {worst.column}: 0 means every group looks like the table, 1 "
                   "that a group's values are unlike the table's; the policy sets no t")


def _perturbation_verdicts(report: Report) -> list[Verdict]:
    if not report.interval:
        why = "no numeric value is changed by this policy, so there is nothing to guess back"
        return [Verdict("interval", "Changed numbers guessable to within a small margin",
                        fmt.DASH, "n/a", why)]
    interval = max(report.interval, key=lambda i: i.risk)
    link = max(report.linkage, key=lambda r: r.risk) if report.linkage else None
    out = [Verdict("interval", "Changed numbers guessable to within a small margin",
                   fmt.share(interval.risk), "info",
                   f"share of records whose true {', '.join(interval.per_column)} lie within "
                   "±5% of a standard deviation of the released value; lower is safer")]
    if link is not None:
        out.append(Verdict("linkage", "Records linked back to their original",
                           fmt.share(link.risk), "info",
                           "share of released records whose nearest original is their own "
                           f"(on {', '.join(link.columns)}); lower is safer"))
    return out


def _blanked_verdict(report: Report) -> Verdict | None:
    changes = [c for c in report.column_changes if c.blanked]
    if not changes:
        return None
    worst = max(changes, key=lambda c: c.blanked or 0.0)
    return Verdict("blanked", "Values blanked to protect people", fmt.share(worst.blanked),
                   "info", f"the most in {worst.column}; blanked values are lost to every "
                   "analysis")


def _loss_verdicts(report: Report) -> list[Verdict]:
    out = []
    u = report.utility
    if u.il1s is not None and u.numeric:
        out.append(Verdict("il1s", "How far numbers moved (IL1s)", fmt.loss(u.il1s.value),
                           "info", "mean change in units of √2 standard deviations over "
                           f"{', '.join(u.numeric)}; 0 means unchanged"))
    if u.eigen_loss is not None:
        out.append(Verdict("eigen", "Correlations between numbers (eigenvalue loss)",
                           fmt.loss(u.eigen_loss), "info",
                           "0 means the correlation structure is kept; larger means "
                           "relationships between columns changed"))
    model = [r for r in report.regressions if r.kind == "model"]
    if model and model[0].max_rel_delta == model[0].max_rel_delta:
        r = model[0]
        out.append(Verdict("regression", f"Regression of {r.target} on the other numbers",
                           f"slopes change by up to {fmt.share(r.max_rel_delta)}", "info",
                           f"{r.target} ~ {' + '.join(r.predictors)} fitted on both data sets"))
    c = report.classifier
    if c is not None:
        out.append(Verdict("classifier", f"Predicting {c.target} from the other columns",
                           f"{fmt.share(c.accuracy_original)} → {fmt.share(c.accuracy_anonymized)}",
                           "info", "accuracy of a model trained on the original vs the "
                           "anonymized data, tested on original records; always guessing the "
                           f"most common value: {fmt.share(c.majority_baseline)}"))
    if report.slicing_check.applies and report.slicing_check.holds is not None:
        out.append(Verdict("slicing", "Analyses within one column group unchanged",
                           "yes" if report.slicing_check.holds else "no", "info",
                           report.slicing_check.verdict))
    return out


def verdicts(report: Report) -> tuple[Verdict, ...]:
    """Every headline figure of ``report`` with its verdict, in reading order."""
    out = [_k_verdict(report), _uniques_verdict(report), _risk_verdict(report)]
    out += _l_verdicts(report)
    t = _t_verdict(report)
    if t is not None:
        out.append(t)
    out += _perturbation_verdicts(report)
    blanked = _blanked_verdict(report)
    if blanked is not None:
        out.append(blanked)
    out += _loss_verdicts(report)
    return tuple(out)


def point_verdict(point: VariantPoint) -> Verdict:
    """The k verdict of one policy on the risk-utility plot."""
    value = fmt.DASH if point.k is None else f"k = {point.k}"
    if point.policy_k is None:
        return Verdict("k", point.label, value, "info", "the original data, for reference")
    if point.k is None or point.k >= point.policy_k:
        return Verdict("k", point.label, value, "meets", f"the policy asks for {point.policy_k}")
    return Verdict("k", point.label, value, "fails",
                   f"groups of {point.k} records; the policy asks for {point.policy_k}")


def comparison_verdicts(comparison: Comparison | Sequence[VariantPoint]) -> tuple[Verdict, ...]:
    """One k verdict per compared policy."""
    points = comparison.variants if isinstance(comparison, Comparison) else comparison
    return tuple(point_verdict(p) for p in points)


_MARK = {"meets": "ok  ", "fails": "FAIL", "info": "info", "n/a": "n/a "}


def headline(report: Report) -> str:
    """What was measured, in one line."""
    p = report.policy
    rule = f"k = {p.get('k')}" + (f", l = {p.get('l')}" if p.get("l") else "")
    ops = ", ".join(o["operator"] for o in p.get("operators", [])) or "no operator"
    return (f"{report.table} as role {report.role} receives it: {fmt.count(report.rows)} rows; "
            f"policy {rule}, on violation {p.get('on_violation')}; {ops}")


def summary_text(result: Report | Comparison) -> str:
    """The one-screen summary the command line prints: one line per figure.

    Each line reads ``<status> <figure>: <value> — <why>``; the status is
    ``ok`` (meets the policy), ``FAIL`` (does not), ``info`` (no limit in the
    policy) or ``n/a`` (not measured).
    """
    if isinstance(result, Comparison):
        lines = [f"{result.table}: {len(result.variants) - 1} policies compared "
                 "(risk = mean chance to re-identify a record; loss = IL1s)"]
        for p, v in zip(result.variants, comparison_verdicts(result), strict=True):
            loss = fmt.loss(p.il1s) if p.il1s is not None else fmt.DASH
            lines.append(f"{_MARK[v.status]} {p.label}: {v.value}, risk "
                         f"{fmt.odds(p.mean_risk)}, loss {loss} — {v.why}")
        return "\n".join(lines)
    lines = [headline(result)]
    lines += [f"{_MARK[v.status]} {v.figure}: {v.value} — {v.why}" for v in verdicts(result)]
    return "\n".join(lines)
