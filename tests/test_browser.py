"""The explorer as a person uses it: JupyterLab on localhost (with a token) opened in
Debian's Chromium through Playwright; run all cells, change a control, wait for the plot
to change, take a screenshot.

Behind the ``browser`` marker (about 40 s on 2 cores with warm kernels; ``.ci/run`` runs it
as ``python -m pytest -q -m browser``).  Skips, saying why, where /usr/bin/chromium or the playwright package is missing
(``.ci/run`` installs both).  The screenshot goes to the test's temporary folder; set
``WORKBENCH_SCREENSHOT=figures/explorer_screenshot.png`` to refresh the one the README shows.
"""
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from workbench.studies.reproduce import notebooks_dir

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_server(url: str, proc: subprocess.Popen, log: Path, timeout: float = 90.0) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"jupyter lab did not answer at {url} within {timeout} s")


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1 serving a copy of explore.ipynb that writes into tmp_path."""
    if not CHROMIUM.exists():
        pytest.skip(f"no browser: {CHROMIUM} is missing (apt-get install chromium; .ci/run does)")
    pytest.importorskip("playwright", reason="the playwright package is missing (pip install -e '.[dev]')")
    work = tmp_path / "lab"
    work.mkdir()
    nb = nbformat.read(notebooks_dir() / "explore.ipynb", as_version=4)
    params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    params.source = params.source.replace('out_dir: str = "figures"', f'out_dir: str = "{tmp_path / "figures"}"')
    nbformat.write(nb, work / "explore.ipynb")
    # render every cell (JupyterLab 4 detaches cells scrolled out of view) and ask no news question
    settings = tmp_path / "settings"
    for ext, values in (("notebook-extension/tracker", '{"windowingMode": "none"}'),
                        ("apputils-extension/notification", '{"fetchNews": "false"}')):
        f = settings / "@jupyterlab" / f"{ext}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(values)
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / "config"), "JUPYTER_RUNTIME_DIR": str(tmp_path / "rt"),
           "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces")}
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
                             f"--port={port}", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={work}",
                             "--LabApp.news_url=", *(["--allow-root"] if os.geteuid() == 0 else [])],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", proc, tmp_path / "lab.log")
        yield f"http://127.0.0.1:{port}", token
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_explorer_responds_in_a_real_browser(lab, tmp_path):
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import sync_playwright

    base, token = lab
    shot = tmp_path / "explorer_screenshot.png"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1400, "height": 1200})
        page.goto(f"{base}/lab/tree/explore.ipynb?token={token}")
        page.locator(".jp-NotebookPanel").first.wait_for(timeout=60_000)
        accept = page.locator(".jp-Dialog .jp-mod-accept").first  # "Select Kernel" on a fresh settings folder
        try:
            accept.wait_for(timeout=15_000)
            accept.click()
        except PlaywrightTimeout:
            pass
        page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=60_000)
        try:
            _run_all_and_change_rounding(page, shot)
        except Exception:
            page.screenshot(path=str(tmp_path / "failure.png"))
            print(f"screenshot of the failure: {tmp_path / 'failure.png'}")
            raise
        browser.close()
    assert shot.stat().st_size > 20_000
    target = os.environ.get("WORKBENCH_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)


def _run_all_and_change_rounding(page, shot: Path) -> None:
    """Run all cells through the Run menu, wait for the explorer's plot, change the rounding
    control, wait for a new plot and take the screenshot."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    # the first update compiles the kernels on a cold cache: allow minutes
    plot = page.locator(".wb-explorer .wb-plot").first
    plot.wait_for(state="attached", timeout=300_000)
    page.wait_for_function("() => { const i = document.querySelector('.wb-explorer .wb-plot');"
                           " return i && i.complete && i.naturalWidth > 100; }", timeout=300_000)
    page.locator(".wb-explorer").first.scroll_into_view_if_needed()
    before = plot.get_attribute("src")
    status = page.locator(".wb-explorer .wb-status").first
    assert "updated in" in status.inner_text()
    # a person changes the rounding of the custom unit from RNE to RZ
    page.locator(".wb-explorer .wb-rounding select").first.select_option("rz")
    page.wait_for_function("(old) => { const i = document.querySelector('.wb-explorer .wb-plot');"
                           " return i && i.getAttribute('src') !== old && i.complete && i.naturalWidth > 100; }",
                           arg=before, timeout=120_000)
    page.wait_for_function("() => document.querySelector('.wb-explorer .wb-status').innerText"
                           ".includes('updated in')", timeout=120_000)
    assert "rounding=rz" in page.locator(".wb-explorer .wb-trace").first.inner_text()
    box = page.locator(".wb-explorer").first
    box.evaluate("el => el.scrollIntoView({block: 'center'})")
    page.screenshot(path=str(shot), clip=box.bounding_box())
