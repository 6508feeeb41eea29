"""The HTML report in headless Chromium: layout sanity (not pixels) and the hover tooltip.

A copy of each page gets ``layout_check.js`` appended; Chromium loads it with
``--dump-dom`` and the script writes what it measured (bounding boxes of every
SVG text, the page's horizontal overflow, the tooltip after a synthetic
``mouseenter``) into the DOM. A screenshot checks that the page is drawn.

Chromium comes from Debian (``apt-get install chromium``; .ci/run installs it).
Without it the tests skip with that reason, and fail when
``PARADISE_REQUIRE_BACKENDS=1`` (as in CI).
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import paradise
from paradise.report import build_report, compare, write_report
from paradise.report.figures import Comparison, VariantPoint
from paradise.tools.demo_data import load_demo

HERE = Path(__file__).parent


def _browser() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "chromium-headless-shell"):
        path = shutil.which(name)
        if path:
            return path
    reason = "chromium not installed (apt-get install chromium)"
    if os.environ.get("PARADISE_REQUIRE_BACKENDS") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _chromium(page: Path, *args: str, width: int = 1200, height: int = 900) -> str:
    browser = _browser()
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--hide-scrollbars", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", *args, page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _measure(page: Path, tmp_path: Path, width: int) -> dict:
    checked = tmp_path / f"checked-{width}-{page.name}"
    script = (HERE / "layout_check.js").read_text()
    checked.write_text(page.read_text().replace("</body>", f"<script>{script}</script></body>"))
    dom = _chromium(checked, "--dump-dom", "--virtual-time-budget=5000", width=width)
    found = re.search(r'<pre id="layout-result">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("pages")
    with paradise.connect(":memory:") as proc:
        load_demo(proc)
        analyst = build_report(proc, role="analyst", table="adult", variants=None)
        cmp = compare(proc, [paradise.bundled_policies()], table="adult")
        report_page, _ = write_report(analyst, out / "report")
        compare_page, _ = write_report(cmp, out / "compare")
    # a crowded plot: twelve policies within a hair of each other
    crowded = Comparison("crowded", "duckdb", tuple(
        VariantPoint(f"policy number {i}", "r", "test", 5 + i, 0, 0.05 + 0.001 * i, None, None,
                     0.1 + 0.002 * i, 0.2, 0.0, policy_k=5) for i in range(12)))
    crowded_page, _ = write_report(crowded, out / "crowded")
    return {"report": report_page, "compare": compare_page, "crowded": crowded_page}


@pytest.mark.parametrize("name", ["report", "compare", "crowded"])
@pytest.mark.parametrize("width", [1200, 700])
def test_no_overflow_and_no_overlapping_labels(pages, name: str, width: int,
                                               tmp_path: Path) -> None:
    result = _measure(pages[name], tmp_path, width)
    assert result["svgs"] >= 2 and result["texts"] > 10 and result["points"] >= 2
    assert result["overflow"] <= 0, (f"page is {result['overflow']}px wider than the window",
                                     result["wide"])
    assert result["overlaps"] == [], result["overlaps"][:10]
    assert result["outside"] == [], result["outside"][:10]


def test_hovering_a_point_shows_its_figures(pages, tmp_path: Path) -> None:
    hover = _measure(pages["report"], tmp_path, 1200)["hover"]
    assert hover["shown"] and hover["text"] == hover["expected"]
    assert hover["text"].startswith("original\nk: ")
    assert hover["right"] <= hover["width"]
    assert hover["hidden_after"]


def test_report_page_is_self_contained_and_drawn(pages, tmp_path: Path) -> None:
    text = pages["report"].read_text()
    stripped = text.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert "http://" not in stripped and "https://" not in stripped and "<img" not in text
    assert "proposed" not in text and "seed 00" not in text  # headings in the user's terms
    for figure in ("class_sizes", "record_risk", "risk_vs_loss", "regression_coefficients"):
        assert f'id="fig-{figure}"' in text
    shot = tmp_path / "shot.png"
    _chromium(pages["report"], f"--screenshot={shot}", width=1200, height=2400)
    from PIL import Image

    image = Image.open(shot).convert("L")
    assert image.size == (1200, 2400)
    histogram = image.histogram()
    non_white = sum(histogram[:245]) / (1200 * 2400)
    assert 0.02 < non_white < 0.6  # drawn, and not a blank or black page
    assert sum(1 for c in histogram if c) > 20
