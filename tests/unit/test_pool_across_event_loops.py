"""The planning pool serves requests on any event loop (session 16's "noticed and left": a FastAPI TestClient used
without ``with`` broke the retry that joins a plan under way; uvicorn, one loop, was unaffected).

Why a new loop per request: Starlette's TestClient outside a ``with`` block opens a fresh anyio blocking portal — its
own thread and event loop — for every request (starlette/testclient.py, ``_portal_factory``), and closes it after.
The pool kept the plan under way as an asyncio future of the first request's loop; a retry on a later loop awaited a
future of a closed loop, and its result was never set there. Expected, from the pool's contract (api/limits.py):
the first request past the deadline is 503 with Retry-After, a retry gets the one plan's answer, and the plan is
computed once."""

from __future__ import annotations

import asyncio
import time

import pytest
from fastapi.testclient import TestClient

from runlocal.api.app import create_app
from runlocal.api.limits import Busy, PlanningPool


def test_two_testclients_in_turn_without_with_share_one_plan(tmp_path, monkeypatch):
    import runlocal.check as check_module

    real_check, calls = check_module.check, []

    def slow_check(req, policy=None):
        calls.append(req.model)
        time.sleep(1.0)                       # past the 0.3 s deadline
        return real_check(req, policy)

    monkeypatch.setattr(check_module, "check", slow_check)
    app = create_app(store_url=f"sqlite:///{tmp_path / 'b.sqlite3'}", plan_workers=1, plan_deadline_s=0.3)
    q = {"model": "qwen3-8b", "gpu": "rtx-4090", "ctx": 4096}
    first = TestClient(app).get("/api/v1/check", params=q)         # its loop closes when it returns
    assert first.status_code == 503 and int(first.headers["retry-after"]) >= 1
    second = TestClient(app)                                       # another client, again without `with`
    answers = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        answers.append(second.get("/api/v1/check", params=q))
        if answers[-1].status_code != 503:
            break
    assert answers[-1].status_code == 200, answers[-1].text
    assert answers[-1].json()["settings"]["ctx"] == 4096
    assert calls == ["qwen3-8b"]             # the retries joined the first request's plan: computed once


def test_the_pool_on_two_event_loops_in_turn():
    """The same at the pool: asyncio.run makes a new loop and closes it, as each TestClient request does."""
    pool = PlanningPool(workers=1, deadline_s=0.2)
    ran = []

    def plan():
        ran.append(1)
        time.sleep(0.6)
        return 42

    async def ask():
        return await pool.run(plan, key="k")

    with pytest.raises(Busy, match="planning took over"):
        asyncio.run(ask())                   # past its deadline; its loop closes with the plan still running
    answer = None
    for _ in range(20):                      # retries, each on its own loop, until the plan's answer is there
        try:
            answer = asyncio.run(ask())
            break
        except Busy:
            continue
    pool.shutdown()
    assert answer == 42 and ran == [1]
