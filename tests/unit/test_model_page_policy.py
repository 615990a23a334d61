"""The site's model pages (/models/<alias>) plan under the server's read policy, as every other page and the API do
(session 17's fix for the pages that planned with the CLI's read-everything policy). The page takes catalog names
only, so no hole is open today; this keeps a later change from opening one. The independent check is the policy's
own refusal: the policy the page plans with refuses a local path, as ReadPolicy.server() does."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

pytest.importorskip("jinja2")


def test_the_model_page_plans_under_the_servers_read_policy(tmp_path, monkeypatch):
    import runlocal.check as check_module
    from runlocal.errors import InputError
    from runlocal.model.policy import ReadPolicy
    from runlocal.testing.browser import served_app
    from runlocal.web import directory

    seen = []
    real = check_module.check

    def spy(req, policy=None, **options):
        seen.append(policy)
        return real(req, policy, **options)

    monkeypatch.setattr(check_module, "check", spy)
    directory.model_facts.cache_clear()
    app = served_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/models/qwen2.5-0.5b").status_code == 200
        policy = app.state.read_policy
    directory.model_facts.cache_clear()
    assert seen and all(p is policy for p in seen)            # before: None, the CLI's read-everything
    assert isinstance(policy, ReadPolicy)
    planted = tmp_path / "config.json"
    planted.write_text("{}")
    with pytest.raises(InputError):
        policy.local_path(str(planted))                        # a path the server's policy does not read
    assert ReadPolicy().local_path(str(planted)) is not None   # the CLI's would
