"""The run page in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`, driven by Selenium) against `kgeval serve` on 127.0.0.1, over two runs of
the mini holdout (an oracle run, then a replay with every kind of answer, see tests/viewing.py).

Screenshots of the run page, a sample, the compare view, the audit and review flows are
written to $KGEVAL_SCREENSHOTS (default: the test's temporary directory) for people to look at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx
import pytest

from tests.oversight import TOKENS, write_access
from tests.service.conftest import Served
from tests.viewing import two_runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


@pytest.fixture
def served(mini_holdout, mini_gold, tmp_path) -> Served:
    """An oracle run, then (newest) the replay run the page must open on."""
    db = tmp_path / "r.duckdb"
    _, run_id = two_runs(mini_holdout, mini_gold, db, tmp_path)
    return Served(mini_holdout, mini_gold, db, write_access(tmp_path / "access.yaml"), run_id)


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("KGEVAL_SCREENSHOTS") or tmp_path / "screenshots")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


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
                "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions", "--window-size=1600,1000",
                f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(executable_path=DRIVER), options=options)
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def _sign_in(browser, server: str, who: str, shots: Path | None = None):  # noqa: ANN202 - a WebDriverWait
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    wait = WebDriverWait(browser, 180)  # a hang guard, not a margin: a loaded 2-core CI machine is slow
    browser.get(f"{server}/ui")
    if shots is not None:
        browser.save_screenshot(str(shots / "0-sign-in.png"))
    browser.find_element(By.ID, "token").send_keys(TOKENS[who]["token"])
    browser.find_element(By.ID, "signin").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "who"), f"signed in as {who}"))
    return wait


def _shot(browser, path: Path) -> None:
    """The whole page, not only the window: the window grows to the page's height for it."""
    width, height = browser.get_window_size()["width"], browser.get_window_size()["height"]
    full = browser.execute_script("return Math.max(document.body.scrollHeight, document.documentElement.scrollHeight)")
    browser.set_window_size(width, max(height, min(full + 120, 6000)))
    browser.save_screenshot(str(path))
    browser.set_window_size(width, height)


def _select(browser, css: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element(By.CSS_SELECTOR, css)).select_by_value(value)


def test_auditor_filters_wrong_answers_sees_the_missing_row_and_records_a_decision(browser, server, served, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ec

    wait = _sign_in(browser, server, "ann", shots)
    # opens on the newest run (the replay), with its harness report and honeypots on top
    wait.until(lambda d: d.find_element(By.ID, "run-select").get_attribute("value") == served.run_id)
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-summary"), "audited: 0"))
    assert "missing 1" in browser.find_element(By.ID, "harness").text
    assert len(browser.find_elements(By.CSS_SELECTOR, "#samples tr.line")) == 16
    _shot(browser, shots / "1-run-page.png")

    _select(browser, "#f-outcome", "wrong")
    lines = browser.find_elements(By.CSS_SELECTOR, "#samples tr.line")
    assert {line.get_attribute("data-outcome") for line in lines} == {"wrong"}
    assert {line.get_attribute("data-question") for line in lines} == {"mini-01", "mini-02", "mini-05", "mini-06", "mini-08"}
    browser.find_element(By.CSS_SELECTOR, '#samples tr.line[data-question="mini-02"][data-seed="0"]').click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#sample-detail .sample[data-key="mini-02/0"] table.rows'))
    detail = browser.find_element(By.ID, "sample-detail")
    answer, gold = detail.find_elements(By.CSS_SELECTOR, ".side table.rows")
    # the executed rows beside the gold rows: Alice matched on both sides, Bob missing from the answer
    assert [r.get_attribute("class") for r in answer.find_elements(By.CSS_SELECTOR, "tr.row")] == ["row mark-matched"]
    missing = gold.find_elements(By.CSS_SELECTOR, "tr.mark-missing")
    assert len(missing) == 1 and missing[0].text.endswith("entities/bob")
    assert "?person → ?p" in answer.text
    assert "executed again read-only" in detail.find_element(By.CSS_SELECTOR, ".execution").text
    assert "P 1.000 R 0.500" in detail.find_element(By.CSS_SELECTOR, '.verdicts tr[data-judge="execution"]').text
    _shot(browser, shots / "2-sample-missing-row.png")

    # the strict subset: the seed judge accepted it, the execution judge did not; the auditor
    # moves to it with the keyboard and disagrees with the accept
    _select(browser, "#f-outcome", "")
    _select(browser, "#f-judges", "disagree")
    lines = browser.find_elements(By.CSS_SELECTOR, "#samples tr.line")
    assert {line.get_attribute("data-question") for line in lines} == {"mini-06"}
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#sample-detail .sample[data-key="mini-06/0"]'))
    assert "29 matched" in browser.find_element(By.CSS_SELECTOR, "#sample-detail .side").text
    # 30 gold rows: pages of 25, the missing row found by paging
    gold_box = browser.find_elements(By.CSS_SELECTOR, "#sample-detail .side .rows-box")[1]
    assert len(gold_box.find_elements(By.CSS_SELECTOR, "tr.row")) == 25 and "rows 1–25 of 30" in gold_box.text
    missing_on_page = lambda: gold_box.find_elements(By.CSS_SELECTOR, "tr.mark-missing")  # noqa: E731
    if not missing_on_page():
        gold_box.find_element(By.XPATH, ".//button[contains(., 'next')]").click()
        assert len(gold_box.find_elements(By.CSS_SELECTOR, "tr.row")) == 5 and "rows 26–30 of 30" in gold_box.text
    assert [r.text.split()[-1] for r in missing_on_page()] == ["http://example.org/mini/entities/item7"]
    _select(browser, "#f-judges", "")
    _select(browser, "#f-outcome", "correct")
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#sample-detail .decide button.disagree"))
    key = browser.find_element(By.CSS_SELECTOR, "#sample-detail .sample").get_attribute("data-key")
    browser.find_element(By.CSS_SELECTOR, "#sample-detail textarea.note-input").send_keys("the gold lists one more item", Keys.ESCAPE)
    browser.find_element(By.TAG_NAME, "body").send_keys("d")
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), "recorded: disagree"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-summary"), "audited: 1"))
    assert "(1/1)" in browser.find_element(By.ID, "audit-summary").text
    # the sample is opened again after the summary: wait for its new state, do not race it
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#sample-detail .audit-state"), "disagree"))
    assert browser.find_element(By.CSS_SELECTOR, "#sample-detail .audit-state").text == "disagree"
    _shot(browser, shots / "3-audit-recorded.png")
    question, seed = key.split("/")
    # the address names the sample: opened again from it, the same sample comes back
    assert browser.current_url.endswith(f"#run={served.run_id}&q={question}&seed={seed}")
    browser.refresh()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#sample-detail .sample[data-key="{key}"]'))
    assert browser.find_element(By.CSS_SELECTOR, f'#samples tr.line.current[data-question="{question}"][data-seed="{seed}"]')
    report = httpx.get(f"{server}/runs/{served.run_id}/report", headers={"Authorization": f"Bearer {TOKENS['admin']['token']}"}).json()
    assert report["audit"]["counts"]["audited"] == 1 and report["audit"]["counts"]["disagree"] == 1
    records = httpx.get(f"{server}/runs/{served.run_id}/samples", headers={"Authorization": f"Bearer {TOKENS['admin']['token']}"}).json()
    assert [r["audit_state"] for r in records if r["question_id"] == question and r["seed"] == int(seed)] == ["disagree"]


def test_auditor_sees_the_rows_beside_the_gold_before_agreeing_in_the_audit_tab(browser, server, served, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = _sign_in(browser, server, "ann")
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-summary"), "audited: 0 of 6 accepts"))
    browser.find_element(By.ID, "tab-audit").click()
    accepts = browser.find_element(By.ID, "accepts")
    accepts.clear()
    accepts.send_keys("3")
    browser.find_element(By.ID, "draw").click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#sample tr.item")) == 3)
    # the first item opens at once: executed rows beside the gold, then the decision
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#audit-detail .side table.rows"))
    first = browser.find_element(By.CSS_SELECTOR, "#audit-detail .sample").get_attribute("data-key")
    assert first == browser.find_elements(By.CSS_SELECTOR, "#sample tr.item")[0].get_attribute("data-key")
    assert len(browser.find_elements(By.CSS_SELECTOR, "#audit-detail .side table.rows")) == 2
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    second = browser.find_elements(By.CSS_SELECTOR, "#sample tr.item")[1].get_attribute("data-key")
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, f'#audit-detail .sample[data-key="{second}"]'))
    browser.find_element(By.TAG_NAME, "body").send_keys("a")
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), f"recorded: agree on {second.split('/')[0]}"))
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, f'#sample tr.item[data-key="{second}"] td.state'), "agree"))
    wait.until(ec.text_to_be_present_in_element((By.ID, "audit-counts"), "audited: 1 of 6 accepts"))
    _shot(browser, shots / "6-audit-tab.png")


def test_compare_view_highlights_flips_and_opens_both_samples(browser, server, served, shots):
    from selenium.webdriver.common.by import By

    wait = _sign_in(browser, server, "admin")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#samples tr.line")) == 16)
    browser.find_element(By.ID, "tab-compare").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#pairs tr.line"))
    flips = {tr.get_attribute("data-question") for tr in browser.find_elements(By.CSS_SELECTOR, "#pairs tr.flip")}
    # the oracle (A) is right everywhere; B is wrong on these (mini-01: one seed right, one broken,
    # a tie, not correct); mini-04's seed 1 has no record, not judged: its judged seed is right
    assert flips == {"mini-01", "mini-02", "mini-05", "mini-06", "mini-08"}
    browser.find_element(By.CSS_SELECTOR, '#pairs tr.flip[data-question="mini-08"]').click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pair-detail .pair .sample")) == 2)
    a_side, b_side = browser.find_elements(By.CSS_SELECTOR, "#pair-detail .pair .sample")
    assert "run A" in a_side.text and "run B" in b_side.text
    assert not a_side.find_elements(By.CSS_SELECTOR, "tr.mark-extra")
    assert len(b_side.find_elements(By.CSS_SELECTOR, "tr.mark-extra")) == 1
    _shot(browser, shots / "4-compare.png")


def test_a_flip_opens_the_seed_that_flipped_on_each_side_legibly_at_1280px(browser, server, served, shots):
    """mini-01: A (the oracle) is right on both seeds; B is right on seed 0 and wrong on seed 1
    (SPARQL that does not parse), so B is wrong by majority. The flip opens B's seed 1, the
    seed that flipped, not seed 0 (right, like A). At 1280 px wide the two verdict panes keep
    their reasons readable: no verdict cell is squeezed to a sliver."""
    from selenium.webdriver.common.by import By

    browser.set_window_size(1280, 900)
    wait = _sign_in(browser, server, "admin")
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#samples tr.line")) == 16)
    browser.find_element(By.ID, "tab-compare").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#pairs tr.flip[data-question="mini-01"]'))
    browser.find_element(By.CSS_SELECTOR, '#pairs tr.flip[data-question="mini-01"]').click()
    wait.until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "#pair-detail .pair .sample")) == 2)
    a_side, b_side = browser.find_elements(By.CSS_SELECTOR, "#pair-detail .pair .sample")
    assert a_side.get_attribute("data-key") == "mini-01/0" and "correct" in a_side.find_element(By.TAG_NAME, "h2").text
    assert b_side.get_attribute("data-key") == "mini-01/1" and "wrong" in b_side.find_element(By.TAG_NAME, "h2").text
    _shot(browser, shots / "4b-compare-flip-1280.png")
    for side in (a_side, b_side):
        assert side.size["width"] >= 380, side.size
        for row in side.find_elements(By.CSS_SELECTOR, "table.verdicts tr[data-judge]"):
            judge, decision, path, figures, reason, _ = row.find_elements(By.TAG_NAME, "td")
            for cell in (judge, decision, path, figures):  # a line or two each (judge: name, version), not a column of letters
                assert cell.size["height"] <= 70, (row.get_attribute("data-judge"), cell.text[:40], cell.size)
            assert reason.size["width"] >= 300, (row.get_attribute("data-judge"), reason.size)  # the reason reads as prose


def test_reviewer_sees_the_gold_and_its_flags_beside_the_list(browser, server, served, shots):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec

    wait = _sign_in(browser, server, "hana")
    browser.find_element(By.ID, "tab-review").click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#questions tr.line[data-question="mini-07"]'))
    browser.find_element(By.CSS_SELECTOR, '#questions tr.line[data-question="mini-07"]').click()
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, "#review-detail .gold-flags .flag"))
    assert [f.text for f in browser.find_elements(By.CSS_SELECTOR, "#review-detail .gold-flags .flag")] == ["empty"]
    # beside the list, not below it
    listing = browser.find_element(By.CSS_SELECTOR, "#review-view .list").rect
    detail = browser.find_element(By.ID, "review-detail").rect
    assert detail["x"] >= listing["x"] + listing["width"] and abs(detail["y"] - listing["y"]) < 5
    browser.find_element(By.ID, "approve").click()
    wait.until(ec.text_to_be_present_in_element((By.ID, "message"), "recorded: approve on mini-07"))
    wait.until(ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#review-detail .gold-flags"), "review: approved"))
    _shot(browser, shots / "5-review.png")


def _copy_attempts(db_path: Path, source: str, target: str, keys: slice) -> None:
    """Append the source run's attempts `keys` (with their verdicts) to the running run, as its
    writer's flush does: one transaction, while the service reads the file."""
    from kgeval.runs import ResultsDB

    with ResultsDB(db_path) as db:
        verdicts: dict[tuple, list] = {}
        for qid, seed, verdict in db.verdicts(source):
            verdicts.setdefault((qid, seed), []).append(verdict)
        db.record_attempts(target, [(a, verdicts.get((a.question_id, a.seed), [])) for a in db.attempts(source)[keys]])


def test_the_run_page_follows_a_running_run_without_a_reload(browser, server, served, shots):
    """Issue 41 item 12: a run in progress is listed as running, its page shows its attempts so
    far and follows new ones (list, count and figures) without a reload, and says when it ended."""
    from datetime import UTC, datetime

    from selenium.webdriver.common.by import By

    from kgeval.runs import ResultsDB

    running = "20991231T000000-replay-running"
    with ResultsDB(served.db) as db:
        done = db.metadata(served.run_id)
        questions = db.questions(served.run_id)
        expected = len(questions) * len(done.seeds)
        meta = done.model_copy(update={"run_id": running, "started_at": datetime.now(UTC).isoformat(), "finished_at": None})
        db.create_run(meta, questions)
    _copy_attempts(served.db, served.run_id, running, slice(0, 2))
    wait = _sign_in(browser, server, "ann")  # the page opens on the newest run: the running one
    progress = lambda text: lambda b: text in b.find_element(By.ID, "run-progress").text  # noqa: E731
    wait.until(progress(f"running: 2 of {expected} attempts so far"))
    assert "2 of 2 attempts" in browser.find_element(By.ID, "shown-count").text
    assert f"{running} (replay, running)" in browser.find_element(By.ID, "run-select").text
    browser.execute_script("window.notReloaded = true")
    _copy_attempts(served.db, served.run_id, running, slice(2, 7))
    wait.until(progress(f"running: 7 of {expected} attempts so far"))
    wait.until(lambda b: "7 of 7 attempts" in b.find_element(By.ID, "shown-count").text)
    _shot(browser, shots / "9-running-run.png")
    _copy_attempts(served.db, served.run_id, running, slice(7, None))
    with ResultsDB(served.db) as db:
        db.finish_run(meta.model_copy(update={"finished_at": datetime.now(UTC).isoformat()}))
    wait.until(lambda b: f"{running} (replay, finished)" in b.find_element(By.ID, "run-select").text)
    assert browser.find_element(By.ID, "run-progress").text == ""
    assert f"{expected} of {expected} attempts" in browser.find_element(By.ID, "shown-count").text
    assert browser.execute_script("return window.notReloaded") is True  # followed in place, never reloaded
