"""The real browser every test here drives: Debian's chromium under Playwright, one per test module."""

import pytest

from runlocal.testing.browser import CHROMIUM_FLAGS, chromium_path


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    exe = chromium_path()
    if not exe:
        pytest.skip("Debian chromium is not installed and cannot be installed here")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=CHROMIUM_FLAGS)
        yield b
        b.close()
