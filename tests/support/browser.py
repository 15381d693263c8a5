"""A real headless Chromium (Debian's `chromium` and `chromium-driver` packages) driven by
selenium through chromedriver, for the web UI's tests and `make screenshots`. Nothing is
downloaded: without the packages, `unavailable()` says why and the tests skip."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.waiting import wait_until

CHROMIUM_PATHS = ("chromium", "chromium-browser", "google-chrome")
WAIT = 15.0  # seconds a page may take to show what a test waits for


def _chromium() -> str | None:
    for name in CHROMIUM_PATHS:
        found = shutil.which(name)
        if found:
            return found
    return None


def unavailable() -> str | None:
    """Why no browser test can run here, or None when they can."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    if _chromium() is None:
        return "chromium is not installed (apt-get install chromium chromium-driver)"
    if shutil.which("chromedriver") is None:
        return "chromedriver is not installed (apt-get install chromium-driver)"
    return None


def start_browser(width: int = 1280, height: int = 900) -> Any:
    """A headless Chromium window of this size; the caller quits it."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _chromium() or ""
    for argument in (
        "--headless=new",
        "--no-sandbox",  # CI runs as root
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--disable-extensions",
        "--no-first-run",
        f"--window-size={width},{height}",
    ):
        options.add_argument(argument)
    return webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))


def log_in(driver: Any, base: str, user: str = "guest", password: str = "guest") -> None:
    """Open the UI and log in through its form."""
    from selenium.webdriver.common.by import By

    driver.get(base + "/")
    wait_until(
        lambda: driver.find_element(By.ID, "login").is_displayed(), timeout=WAIT, interval=0.1
    )
    username = driver.find_element(By.ID, "username")
    username.clear()
    username.send_keys(user)
    driver.find_element(By.ID, "password").send_keys(password)
    driver.find_element(By.ID, "login-button").click()
    wait_until(
        lambda: driver.find_element(By.ID, "logout").is_displayed(), timeout=WAIT, interval=0.1
    )


def text_of(driver: Any, css: str) -> str | None:
    """The text of the first element matching `css`, or None while there is none."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return found[0].text if found else None
    except StaleElementReferenceException:
        return None  # redrawn under us by a refresh: ask again


def wait_text(driver: Any, css: str, check: Callable[[str], bool], what: str = "") -> str:
    """Wait until the element's text satisfies `check`; returns that text."""

    def ready() -> str | None:
        text = text_of(driver, css)
        return text if text is not None and check(text) else None

    return wait_until(ready, timeout=WAIT, interval=0.1, message=what or f"{css} never matched")


def click(driver: Any, css: str) -> None:
    """Click the element matching `css`, finding it again should a refresh redraw it between
    finding and clicking."""
    from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def attempt() -> bool:
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
        except (NoSuchElementException, StaleElementReferenceException):
            return False
        return True

    wait_until(attempt, WAIT, 0.1, f"nothing to click at {css}")


def rows(driver: Any, css: str) -> list[list[str]]:
    """The cell texts of a table's body rows, read in one go (a refresh cannot split them)."""
    script = (
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr'))"
        ".map(r => Array.from(r.cells).map(c => c.innerText.trim()))"
    )
    return driver.execute_script(script, css)


def goto(driver: Any, hash_: str, ready_css: str) -> None:
    """Navigate inside the page (no reload) and wait until the view has drawn `ready_css`."""
    from selenium.webdriver.common.by import By

    driver.execute_script("window.location.hash = arguments[0]", hash_)
    wait_until(
        lambda: driver.find_elements(By.CSS_SELECTOR, ready_css),
        timeout=WAIT,
        interval=0.1,
        message=f"{hash_}: {ready_css} never drawn",
    )


def alert(driver: Any) -> Any:
    """The open alert or confirm dialog, or None."""
    from selenium.common.exceptions import NoAlertPresentException

    try:
        return driver.switch_to.alert
    except NoAlertPresentException:
        return None


def accept_confirm(driver: Any) -> None:
    """Wait for the page's confirm() dialog and accept it."""
    wait_until(lambda: alert(driver), timeout=WAIT, interval=0.1).accept()


def screenshot(driver: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(path))
