"""The live dashboard: its data endpoint on a run in progress, a real browser watching a run that commits
micro-batches, and a real browser watching a storm unfold as a sliced Spark run commits it slice by slice
(headless Chromium driven by selenium; skipped where either is missing)."""

from __future__ import annotations

import json
import shutil
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from simulations.reports.dashboard import make_server
from simulations.scenarios import generate, parse_scenario, to_jsonl
from state.config import CoordinatorConfig

from ..conftest import SAMPLE
from ..views.runs import T0, live_run

SAMPLE_CUTS = [T0 + 60_000, T0 + 150_000, T0 + 10**9]  # the sample's first minute, 2.5 minutes, the rest
CHROMIUM, CHROMEDRIVER = shutil.which("chromium"), shutil.which("chromedriver")
needs_chromium = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="needs Debian's chromium and chromium-driver")
# A storm small enough for a test: 2 minutes, a rolling restart restarting a member every 20 s from 10 s
# on, run by Spark in 30 s slices held to 6x real time, so each slice stays on the page for at least 5 s and
# the first three all move partitions.
STORM = """
name: storm
start: 2026-06-01T00:00:00Z
duration: 2m
seed: 7
group_sets:
  - name: svc
    groups: 6
    members: 4
    topics:
      - {name: orders, partitions: 8, records_per_second: 20}
timeline:
  - {at: 10s, action: rolling_restart, downtime: 5s, gap: 15s}
"""
STORM_SLICE_MS, STORM_SPEED = 30_000, 6.0


@pytest.fixture
def serve():
    servers = []

    def start(run_dir: Path, refresh_s: float = 2.0) -> str:
        server = make_server(run_dir, "127.0.0.1", 0, refresh_s)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        return reply.read().decode("utf-8")


def test_panels_endpoint_waits_for_the_run_then_follows_it(tmp_path, serve):
    url = serve(tmp_path / "live")
    assert "Waiting for the run" in json.loads(_get(url + "panels"))["panels"]
    assert "Waiting for the run" in _get(url)
    batches = live_run(SAMPLE, tmp_path / "live", SAMPLE_CUTS)
    next(batches)
    first = json.loads(_get(url + "panels"))
    assert first["groups"] and '<section id="timeline">' in first["panels"] and "(in progress)" in first["summary"]
    next(batches)
    picked = json.loads(_get(url + "panels?group=billing-exporter"))
    assert picked["chosen"] == "billing-exporter" and picked["summary"] != first["summary"]
    assert "Partition ownership over time: billing-exporter" in picked["panels"]
    page = _get(url)
    assert page[:page.index("<script>")].count("<option") == len(picked["groups"])


def test_the_dashboard_draws_outages_ownership_and_empty_panels_as_the_report_does(failed_broker_run, serve):
    panels = json.loads(_get(serve(failed_broker_run) + "panels?group=payments-17"))["panels"]
    assert 'fill="url(#coordinator-unavailable)"' in panels  # broker 3's failure, not a Dead group
    assert "Partition ownership over time: payments-17" in panels and ": no owner " not in panels
    assert "None: no record was processed twice or skipped." in panels


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium under selenium, and `steady(read)`: `read()` again when the page's refresh replaced
    an element while it was being read."""
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.common.exceptions import StaleElementReferenceException

    def steady(read):
        for _ in range(50):
            try:
                return read()
            except StaleElementReferenceException:
                time.sleep(0.05)
        return read()

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium-profile'}",
                 "--window-size=1100,3200", "--hide-scrollbars"):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=webdriver.ChromeService(executable_path=CHROMEDRIVER))
    try:
        yield driver, steady
    finally:
        driver.quit()


@needs_chromium
def test_dashboard_in_a_browser_during_a_run(tmp_path, serve, browser):
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select, WebDriverWait

    driver, steady = browser
    batches = live_run(SAMPLE, tmp_path / "live", SAMPLE_CUTS)
    next(batches)
    url = serve(tmp_path / "live", refresh_s=0.3)
    driver.get(url)
    wait = WebDriverWait(driver, 20, ignored_exceptions=(StaleElementReferenceException,))
    summary = lambda: steady(lambda: driver.find_element(By.ID, "summary").text)  # noqa: E731
    assert "(in progress)" in summary()
    before = summary()
    next(batches)  # the run commits another micro-batch; the page must pick it up by itself
    wait.until(lambda d: summary() != before)
    steady(lambda: Select(driver.find_element(By.ID, "group")).select_by_visible_text("inventory-sync"))
    wait.until(lambda d: "inventory-sync" in d.find_element(By.CSS_SELECTOR, "#heatmap h2").text)
    before = summary()
    next(batches)
    wait.until(lambda d: summary() != before)
    time.sleep(1)  # a few more refreshes: nothing changes any more
    for panel in ("timeline", "rebalances", "in_rebalance", "moved", "heatmap", "commits", "load"):
        assert steady(lambda: driver.find_elements(By.CSS_SELECTOR, f"#{panel} svg rect")), f"{panel} shows no data"
    for panel in ("unconsumed", "consumption"):  # a replay of captured requests: no consumers' figures
        assert "synthetic clients" in steady(lambda: driver.find_element(By.ID, panel).text), panel
    assert steady(lambda: driver.find_element(By.ID, "group").get_attribute("value")) == "inventory-sync"
    shot = tmp_path / "dashboard.png"
    driver.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")


@pytest.mark.spark
@needs_chromium
def test_a_sliced_storm_unfolds_in_the_browser(spark, tmp_path, serve, browser):
    """The issue's test: a browser on the dashboard of a storm that Spark runs in slices sees the panels in at
    least three distinct states before the run ends, with the slice the run has reached."""
    from selenium.webdriver.common.by import By
    from streaming.engine import run_spark

    driver, steady = browser
    generated = generate(parse_scenario(STORM))
    events = tmp_path / "events.jsonl"
    events.write_text(to_jsonl(generated.rows), encoding="utf-8")
    out = tmp_path / "storm"
    driver.get(serve(out, refresh_s=0.3))
    finished = []
    run = threading.Thread(target=lambda: finished.append(run_spark(
        [str(events)], str(out), CoordinatorConfig(), generated.until_ms, progress=False, slice_ms=STORM_SLICE_MS,
        speed=STORM_SPEED)))
    run.start()
    seen: list[tuple[str, str]] = []  # (what the header says the run has reached, the panels), in order
    while run.is_alive():
        header = steady(lambda: driver.find_element(By.ID, "summary").text)
        panels = steady(lambda: driver.find_element(By.ID, "panels").get_attribute("innerHTML"))
        if "(in progress)" in header and "(slice " in header and (not seen or seen[-1][1] != panels):
            reached = header[header.index("reached"):].splitlines()[1]
            seen.append((reached, panels))
        time.sleep(0.1)
    run.join()
    assert finished and finished[0].batches >= 4  # one micro-batch per 30 s slice of the 2 minutes, and more
    assert len(seen) >= 3, [reached for reached, _ in seen]
    # The header says how far the run has got, and that only ever moves forward.
    slices_reached = [int(reached.split("(slice ")[1].split()[0]) for reached, _ in seen]
    assert slices_reached == sorted(slices_reached) and len(set(slices_reached)) >= 2, slices_reached
    # After the run, the page shows the finished run.
    assert "(in progress)" not in _wait_for(lambda: steady(lambda: driver.find_element(By.ID, "summary").text),
                                             lambda text: "(in progress)" not in text)


def _wait_for(read, done, timeout_s: float = 20.0):
    deadline = time.monotonic() + timeout_s
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.1)
        value = read()
    return value
