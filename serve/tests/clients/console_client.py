"""Drives motet's web console in headless Chromium through selenium, as a person would.

    python console_client.py BASE_URL TOKEN AGENT SCENARIO SCREENSHOT_PNG

Chromium and its driver come from MOTET_CHROMIUM and MOTET_CHROMEDRIVER (Debian's chromium and
chromium-driver); selenium is never asked to fetch a browser or a driver. The scenarios:

- approve: ask, wait for the three gated calls to show among the waiting calls, then from the
  page approve the first, edit the second's arguments and run it, reject the third with a
  reason, and watch the answer stream in;
- stream: ask, and watch the answer stream in.

Each prints JSON lines (`what` names the line) for the Rust test to judge, and saves a
screenshot of the page at its end. A step that does not happen in time raises, and the script
exits non-zero.
"""

import json
import os
import shutil
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import (ElementNotInteractableException,
                                        StaleElementReferenceException)
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1400,1000",
]


def say(what, **fields):
    print(json.dumps({"what": what, **fields}), flush=True)


def browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ["MOTET_CHROMIUM"]
    for flag in FLAGS + [f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(executable_path=os.environ["MOTET_CHROMEDRIVER"])
    return webdriver.Chrome(service=service, options=options)


def text_of(driver, element_id):
    return driver.find_element(By.ID, element_id).text


def open_agent(driver, base, token, agent, wait):
    driver.get(base + "/")
    # No token yet: the page says it needs one.
    wait.until(lambda d: "token" in text_of(d, "status"))
    say("locked", status=text_of(driver, "status"))
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "use-token").click()
    button = wait.until(lambda d: d.find_element(By.CSS_SELECTOR, f'#agents button[data-agent="{agent}"]'))
    button.click()
    wait.until(lambda d: not d.find_element(By.ID, "ask").get_attribute("disabled"))


def ask(driver, query):
    driver.find_element(By.ID, "query").send_keys(query)
    driver.find_element(By.ID, "ask").click()


def watch_answer(driver, timeout):
    """The distinct texts the live area showed, sampled until the final answer is shown."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = driver.find_element(By.ID, "live").text
        if not seen or seen[-1] != live:
            seen.append(live)
        status = text_of(driver, "run-status")
        if ": failed" in status:
            raise RuntimeError(f"the run failed: {status}; the live text went {seen!r}")
        answer = driver.find_element(By.ID, "answer").text
        if answer:
            live = driver.find_element(By.ID, "live").text
            if seen[-1] != live:
                seen.append(live)
            return seen, answer
        time.sleep(0.02)
    raise TimeoutError(f"no answer shown within {timeout} s; the live text went {seen!r}")


def report_page(driver, shot):
    deltas = int(driver.find_element(By.ID, "live").get_attribute("data-deltas"))
    transcript = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#transcript li")]
    say("page", run_status=text_of(driver, "run-status"), deltas=deltas, transcript=transcript,
        waiting=text_of(driver, "waiting"))
    os.makedirs(os.path.dirname(os.path.abspath(shot)), exist_ok=True)
    if not driver.save_screenshot(shot):
        raise RuntimeError(f"the screenshot could not be written to {shot}")
    say("screenshot", path=shot, bytes=os.path.getsize(shot))
    logs = [entry["message"] for entry in driver.get_log("browser")]
    say("console", messages=logs)


def card(driver, call):
    """The waiting call `call`'s card, found afresh."""
    return driver.find_element(By.CSS_SELECTOR, f'#waiting li[data-call="{call}"]')


def act(wait, action):
    """Runs `action(driver)` until it goes through whole.

    The waiting list is redrawn each time the page hears of a wait or an answer, so a card found
    a moment ago may be gone: the wait retries on a missing or stale element, and `action`
    finds what it needs afresh each time (and a card just drawn may not take keys or clicks
    yet)."""
    return wait.until(lambda d: action(d) or True)


def fill_and_click(call, field, text, button):
    """The action that types `text` into `field` of the card of `call`, then clicks `button`
    of it. While the field has the focus the page leaves the list alone, so the typing and the
    click land on one card."""
    def action(d):
        typed = card(d, call).find_element(By.CSS_SELECTOR, field)
        typed.clear()
        typed.send_keys(text)
        card(d, call).find_element(By.CSS_SELECTOR, button).click()
    return action


def answered(driver, wait, call):
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, f'#waiting li[data-call="{call}"]'))


def approve(driver, base, token, agent, shot):
    wait = WebDriverWait(driver, 120, ignored_exceptions=(StaleElementReferenceException,
                                                          ElementNotInteractableException))
    open_agent(driver, base, token, agent, wait)
    ask(driver, "Please clean up /tmp/x.")

    def shown(d):
        cards = [card(d, call) for call in ("c1", "c2", "c3")]
        args = cards[0].find_element(By.CSS_SELECTOR, "textarea.args").get_attribute("value")
        return [c.text for c in cards], args

    texts, args = act(wait, shown)
    say("waiting", cards=texts, args=args, live=text_of(driver, "live"),
        run_status=text_of(driver, "run-status"))
    act(wait, lambda d: card(d, "c1").find_element(By.CSS_SELECTOR, "button.approve").click())
    answered(driver, wait, "c1")

    act(wait, fill_and_click("c2", "textarea.args", '{"path": "/tmp/z"}', "button.edit"))
    answered(driver, wait, "c2")
    act(wait, fill_and_click("c3", "input.reason", "keep it", "button.reject"))
    seen, answer = watch_answer(driver, 120)
    say("answer", seen=seen, answer=answer)
    # The approved and the edited call ran: their results are in the transcript (the rejected
    # call's refusal too), and nothing waits any more.
    for result in ("removed /tmp/x", "removed /tmp/z", "keep it"):
        wait.until(lambda d: any(result in li.text
                                 for li in d.find_elements(By.CSS_SELECTOR, "#transcript li")))
    wait.until(lambda d: not d.find_elements(By.CSS_SELECTOR, "#waiting li[data-call]"))
    report_page(driver, shot)


def stream(driver, base, token, agent, shot):
    wait = WebDriverWait(driver, 120)
    open_agent(driver, base, token, agent, wait)
    ask(driver, "Count from one to twenty in words, separated by commas.")
    seen, answer = watch_answer(driver, 540)
    say("answer", seen=seen, answer=answer)
    report_page(driver, shot)


def main():
    base, token, agent, scenario, shot = sys.argv[1:6]
    profile = tempfile.mkdtemp(prefix="motet-console-")
    driver = browser(profile)
    try:
        {"approve": approve, "stream": stream}[scenario](driver, base, token, agent, shot)
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
