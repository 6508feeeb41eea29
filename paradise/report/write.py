"""``write_report``: the report as one self-contained HTML page and one JSON file."""

from __future__ import annotations

from pathlib import Path

from paradise.report.figures import Comparison, Report

__all__ = ["write_report"]


def write_report(report: Report | Comparison, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``<table>-<role>.html`` and ``.json`` (a comparison: ``<table>-compare``).

    The HTML page needs no network: plots are inline SVG, the hover script and
    styles are inline. Returns ``(html_path, json_path)``.
    """
    from paradise.report.html import render_comparison, render_report

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if isinstance(report, Report):
        stem = f"{report.table}-{report.role}"
        html = render_report(report)
    else:
        stem = f"{report.table}-compare"
        html = render_comparison(report)
    html_path, json_path = out / f"{stem}.html", out / f"{stem}.json"
    html_path.write_text(html, encoding="utf-8")
    json_path.write_text(report.to_json(), encoding="utf-8")
    return html_path, json_path
