"""The site's Compare page takes System RAM as check's page and /api/v1/compare do (session 16's "noticed and left":
the page had no RAM field, so a row whose plan holds layers in system memory was planned at an assumed 32 GiB).

Hand computation: Llama-3.1-70B at Q4_K_M is a 42.52 GB file (huggingface.co/bartowski/Meta-Llama-3.1-70B-Instruct-GGUF,
Meta-Llama-3.1-70B-Instruct-Q4_K_M.gguf); an RTX 4090 has 24 GB (23.64 GiB usable under CUDA), so at least
42.52 − 24 = 18.5 GB (17.2 GiB) of the weights are held in system RAM: 16 GiB cannot hold them (does not fit), 64 GiB
can (it runs); left unstated, the row says what RAM it needs instead of a verdict resting on the assumed size."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")

ROW = {"d": "rtx-4090", "model": "llama-3.1-70b", "ctx": "8192"}


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    from runlocal.testing.browser import served_app

    app = served_app(store_url=f"sqlite:///{tmp_path_factory.mktemp('db') / 'b.sqlite3'}", admin_token="x")
    with TestClient(app, base_url="http://127.0.0.1") as c:
        yield c


def row_text(html: str) -> str:
    body = html.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", body).split())


def test_the_form_has_the_ram_field_and_keeps_what_was_typed(client):
    r = client.get("/compare", params={**ROW, "ram": "64G"})
    assert r.status_code == 200
    assert re.search(r'<input id="ram" name="ram" value="64G"', r.text)


def test_ram_changes_a_cpu_offload_row_as_the_api_plans_it(client):
    small = client.get("/compare", params={**ROW, "ram": "16G"})
    large = client.get("/compare", params={**ROW, "ram": "64G"})
    assert "Does not fit" in row_text(small.text)            # 17.2 GiB of weights in RAM > 16 GiB
    assert "Does not fit" not in row_text(large.text)        # 64 GiB holds them
    for ram, page in (("16G", small), ("64G", large)):       # the same contract as /api/v1/compare's ram
        api = client.get("/api/v1/compare", params={"devices": "rtx-4090", "model": "llama-3.1-70b", "ctx": 8192,
                                                    "ram": ram}).json()[0]
        words = {"does_not_fit": "Does not fit", "tight": "Tight", "fits": "Fits"}[api["verdict"]]
        assert words in row_text(page.text)
    unstated = client.get("/compare", params=ROW).text
    assert "if RAM ≥" in unstated and "set System RAM to" in unstated       # the condition names the page's field


def test_a_bare_number_is_refused_naming_the_field(client):
    r = client.get("/compare", params={**ROW, "ram": "64"})
    assert r.status_code == 422 and "ram" in r.text and "64G" in r.text
