"""The auditor page in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium) against `kgeval serve` on 127.0.0.1. Sign in, draw an
audit sample, record a decision, and see it counted in the report summary on the page."""

from __future__ import annotations

import os
import shutil

import httpx
import pytest

from tests.oversight import TOKENS

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def browser(tmp_path):
    if not (CHROMIUM and DRIVER):
        reason = "headless Chromium needs Debian's chromium and chromium-driver (apt-get install -y chromium chromium-driver)"
        if os.environ.get("KGEVAL_REQUIRE_SERVERS") == "1":
            pytest.fail(reason + "; KGEVAL_REQUIRE_SERVERS=1 forbids skipping")
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver", reason="the selenium package is in the test extra")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
                f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def test_auditor_records_a_decision_and_sees_it_counted(browser, server, served):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 30)
    browser.get(f"{server}/ui")
    browser.find_element(By.ID, "token").send_keys(TOKENS["ann"]["token"])
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "who"), "signed in as ann"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-summary"), "audited: 0"))
    accepts = browser.find_element(By.ID, "accepts")
    accepts.clear()
    accepts.send_keys("4")
    browser.find_element(By.ID, "draw").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sample tr.item")) == 4)
    row = browser.find_elements(By.CSS_SELECTOR, "#sample tr.item")[0]
    key = row.get_attribute("data-key")
    row.find_element(By.CSS_SELECTOR, "textarea.note").send_keys("the gold lists one more department")
    row.find_element(By.CSS_SELECTOR, "button.disagree").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), "recorded: disagree"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-summary"), "audited: 1"))
    summary = browser.find_element(By.ID, "audit-summary").text
    assert "false-accept rate 100.0%" in summary and "(1/1)" in summary
    state = browser.find_element(By.CSS_SELECTOR, f'#sample tr.item[data-key="{key}"] td.state').text
    assert state == "disagree"
    # the same decision is in the report served to anyone with a token
    report = httpx.get(f"{server}/runs/{served.run_id}/report", headers={"Authorization": f"Bearer {TOKENS['admin']['token']}"}).json()
    assert report["audit"]["counts"]["audited"] == 1 and report["audit"]["counts"]["disagree"] == 1
