"""The "Will it run?" page end to end in a real headless Chromium: fill the form, read the verdict,
take a screenshot (left in the pytest tmp dir, path printed)."""

import pytest

pytest.importorskip("runlocal.model.hf_config", reason="HF config reader not landed yet")
pytest.importorskip("runlocal.diagnose.classify", reason="diagnose engine not landed yet")
from browser import CHROMIUM_FLAGS, chromium_path, running_app

pytestmark = pytest.mark.browser


def expect(locator):
    """Playwright's auto-waiting assertions (no string eval, which the page's Content-Security-Policy forbids)."""
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


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


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    from runlocal.api.app import create_app

    app = create_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="x")
    with running_app(app) as url:
        yield url


def test_fill_form_read_verdict_screenshot(browser, base_url, tmp_path):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base_url + "/")
    page.wait_for_selector("#gpu option")
    page.fill("#model", "llama-3.1-8b")
    page.select_option("#gpu", "rtx-4090")
    page.select_option("#runtime", "llama.cpp")
    page.select_option("#quant", "Q4_K_M")
    page.fill("#ctx", "13")        # 2^13 = 8,192 tokens
    page.dispatch_event("#ctx", "input")
    expect(page.locator("#verdict")).to_contain_text("Fits", timeout=15000)   # no eval: the page's CSP forbids it
    assert "8,192" in page.text_content("#ctx-out")
    assert page.locator("#devices .bar").count() >= 1
    assert page.locator("#curve polyline").count() == 1
    assert "KV 128 KiB/token" in page.text_content("body")      # Llama 3.1 8B: 32 × 2 × 8 × 128 × 2 B

    page.select_option("#gpu", [])   # clear, then an 8 GiB card at 128K: 16 GiB of KV alone
    page.select_option("#gpu", "rtx-4060")
    page.fill("#ctx", "17")
    page.dispatch_event("#ctx", "input")
    # llama-server's --fit (its default) keeps layers in RAM so it runs, slowly: said, with fixes
    expect(page.locator("#verdict")).to_contain_text("Tight", timeout=15000)
    assert "--fit" in page.text_content("#summary")
    assert page.locator("#fixes li code").count() >= 1          # a fix with a copyable command
    # the parallel box left empty sends no parallel: llama-server's own -np auto, so no --parallel in the command
    assert "--parallel" not in page.text_content("#command")
    page.fill("#parallel", "2")
    page.dispatch_event("#parallel", "input")
    expect(page.locator("#command")).to_contain_text("--parallel 2", timeout=15000)
    shot = tmp_path / "will-it-run.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    print(f"screenshot: {shot}")
    assert not errors, errors


def test_diagnose_box(browser, base_url):
    page = browser.new_page()
    page.goto(base_url + "/#errors")
    page.fill("#log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                      "capacity of 23.64 GiB of which 1.19 GiB is free.")
    page.click("#diagnose-btn")
    page.wait_for_selector("#diagnosis h3", timeout=15000)
    assert "cuda_oom" in page.text_content("#diagnosis h3")


def test_compare_view(browser, base_url, tmp_path):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(base_url + "/#compare")
    expect(page.locator("#compare-devices option").nth(10)).to_be_attached()
    page.select_option("#compare-devices", ["rtx-4090", "rtx-3090"])
    page.click("#compare-btn")
    page.wait_for_selector("#compare-table tr:nth-child(3) td", timeout=15000)
    headers = page.locator("#compare-table th").all_text_contents()
    rows = [page.locator(f"#compare-table tr:nth-child({i}) td").all_text_contents() for i in (2, 3)]
    speed = [float(r[headers.index("decode tokens per s")].replace(",", "")) for r in rows]
    assert {r[0] for r in rows} == {"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 3090"}
    assert all(s > 0 for s in speed) and all(r[headers.index("verdict")] == "fits" for r in rows)
    page.screenshot(path=str(tmp_path / "compare.png"), full_page=True)
    assert not errors, errors
