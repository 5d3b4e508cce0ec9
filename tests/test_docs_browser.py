"""The built documentation site in Debian's Chromium (Playwright): the home page and one
catalogue page render, with their content, navigation and images.

Behind the ``browser`` marker; needs the site built first (``.ci/run`` runs
``python -m sphinx -W --keep-going -n docs docs/_build/html`` before it).  Skips, saying why,
where the build, /usr/bin/chromium or the playwright package is missing.  Set
``WORKBENCH_DOCS_SCREENSHOT=figures/docs_screenshot.png`` to refresh the README's screenshot.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.units import catalogue

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "docs" / "_build" / "html"
CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.browser


@pytest.fixture
def page():
    if not (SITE / "index.html").is_file():
        pytest.skip(f"the site is not built: {SITE / 'index.html'} is missing (python -m sphinx docs docs/_build/html)")
    if not CHROMIUM.exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium; .ci/run does)")
    pytest.importorskip("playwright", reason="the playwright package is missing (pip install -e '.[dev]')")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        pg = browser.new_page(viewport={"width": 1200, "height": 900})
        yield pg
        browser.close()


def test_home_and_a_catalogue_page_render(page, tmp_path):
    page.goto((SITE / "index.html").as_uri())
    assert page.title().startswith("Mixed-precision workbench")
    assert page.locator("h1").first.inner_text().startswith("Mixed-precision workbench")
    nav = page.locator(".sidebar-tree").inner_text()
    for entry in ("Getting started", "User guide", "Unit catalogue", "How-to guides", "Figure gallery", "API reference"):
        assert entry in nav, entry
    shot = os.environ.get("WORKBENCH_DOCS_SCREENSHOT")
    page.screenshot(path=shot or str(tmp_path / "home.png"))

    page.get_by_role("link", name="Unit catalogue").first.click()
    page.get_by_role("link", name="hopper", exact=True).first.click()
    assert page.url.endswith("/generated/catalogue/hopper.html")
    assert page.locator("h1").first.inner_text().startswith("hopper")
    hopper = [r for r in catalogue.presets() if r["architecture"] == "hopper"]
    headings = page.locator("h2").all_inner_texts()
    assert all(any(r["name"] in h for h in headings) for r in hopper), headings
    first = page.locator("section").filter(has=page.locator("h2")).nth(1).inner_text()
    assert "Source." in first and "kind" in first
    # the page's stylesheet loaded: the theme lays the sidebar out beside the content
    assert page.locator(".sidebar-drawer").bounding_box()["width"] > 100
