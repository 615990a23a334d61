"""Bounded work for the HTTP API: a planning pool with a deadline, per-client rate limits, security headers.

* Planning is CPU work of seconds to minutes for the largest models (an uncached DeepSeek-V3 plan, Ollama's
  partial-offload search). It runs in its own thread pool of ``workers`` threads; a request that finds every
  planner busy for ``queue_wait_s``, or whose plan outlives ``deadline_s``, is answered 503 with Retry-After
  while the event loop keeps serving everything else. A plan that outlives its deadline keeps its thread until
  it ends (Python threads cannot be killed), so at most ``workers`` such plans run at once; its result is
  cached, so the client's retry is answered at once. What a plan kept (memo entries, specs) is frozen out of
  the cyclic collector after it, and a sweep runs only while no plan is in flight (runlocal.gcfreeze).
* Write endpoints are rate-limited per client address with a token bucket. Hand-rolled (twenty lines) rather
  than slowapi/limits or pyrate-limiter: one in-process bucket per address is all a single-process server
  needs, and neither library would be a runtime dependency worth its weight here.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .. import gcfreeze


class Busy(Exception):
    """Planning capacity or the deadline was exceeded: answer 503 with Retry-After."""

    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class PlanningPool:
    """The planner threads and the computations under way, keyed so that a retry joins the one running. What is
    kept between requests is thread-side (concurrent.futures), never an asyncio future: each request awaits its own
    future on its own event loop, so the pool serves a request on any loop — uvicorn's one loop, or a new loop per
    request as Starlette's TestClient runs one without ``with`` — and a retry on another loop joins the same plan."""

    def __init__(self, workers: int = 2, deadline_s: float = 20.0, queue_wait_s: float = 1.0):
        self.workers, self.deadline_s, self.queue_wait_s = workers, deadline_s, queue_wait_s
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="runlocal-plan")
        self._slots = threading.BoundedSemaphore(workers)
        self._inflight: dict[str, Future] = {}              # key → the computation under way (thread-side)
        self._inflight_lock = threading.Lock()
        self._running = 0                                   # plans on the planner threads now
        self._running_lock = threading.Lock()

    async def run(self, fn: Callable[..., Any], *args: Any, key: str | None = None) -> Any:
        """``fn(*args)`` on a planner thread, or 503 (Busy). Requests with the same ``key`` share one computation:
        a retry after a 503 waits for the plan already running instead of starting another."""
        loop = asyncio.get_running_loop()
        work = self._joined(key)
        if work is None:
            if not await self._acquire(loop):
                raise Busy(f"every planner is busy ({self.workers} at once); retry shortly", retry_after=2)
            work = self._joined(key)            # another request started it while this one waited for a slot
            if work is not None:
                self._slots.release()
            else:
                work = self._start(fn, args, key)
        try:
            return await asyncio.wait_for(_awaited_on(loop, work), timeout=self.deadline_s)
        except asyncio.TimeoutError:
            raise Busy(f"planning took over {self.deadline_s:g} s; it goes on, retry to get its answer",
                       retry_after=max(1, int(self.deadline_s))) from None

    def _joined(self, key: str | None) -> Future | None:
        if key is None:
            return None
        with self._inflight_lock:
            return self._inflight.get(key)

    def _start(self, fn: Callable[..., Any], args: tuple, key: str | None) -> Future:
        """Submit the plan (its slot already held); a keyed one is kept until it ends, whichever loop asked."""
        try:
            work = self._executor.submit(self._release_after, fn, args)
        except BaseException:
            self._slots.release()
            raise
        if key is not None:
            with self._inflight_lock:
                self._inflight[key] = work
            work.add_done_callback(lambda done: self._forget(key, done))
        return work

    def _forget(self, key: str, done: Future) -> None:
        with self._inflight_lock:
            if self._inflight.get(key) is done:
                del self._inflight[key]

    async def _acquire(self, loop) -> bool:
        """Wait briefly for a free planner without blocking the event loop; the slot is held until the plan
        really ends (the worker thread releases it)."""
        give_up = loop.time() + self.queue_wait_s
        while not self._slots.acquire(blocking=False):
            if loop.time() >= give_up:
                return False
            await asyncio.sleep(0.02)
        return True

    def _release_after(self, fn: Callable[..., Any], args: tuple) -> Any:
        with self._running_lock:
            self._running += 1
        try:
            return fn(*args)
        finally:
            gcfreeze.freeze_after_plan()
            with self._running_lock:
                self._running -= 1
                idle = self._running == 0
            if idle:       # a full collection every SWEEP_EVERY plans, never beside a plan
                gcfreeze.sweep_if_due()
            self._slots.release()

    def shutdown(self) -> None:
        self._executor.shutdown(wait=False, cancel_futures=True)


def _awaited_on(loop: asyncio.AbstractEventLoop, work: Future) -> asyncio.Future:
    """An asyncio future on ``loop`` that takes ``work``'s outcome. Cancelling it (the deadline) leaves the plan
    running; an outcome that arrives after ``loop`` has closed (that request is gone) is dropped quietly."""
    waiter = loop.create_future()

    def settle(done: Future) -> None:
        if waiter.done():
            return
        if done.cancelled():
            waiter.cancel()
        elif (error := done.exception()) is not None:
            waiter.set_exception(error)
        else:
            waiter.set_result(done.result())

    def relay(done: Future) -> None:
        try:
            loop.call_soon_threadsafe(settle, done)
        except RuntimeError:        # the loop has closed: nobody awaits this request's answer any more
            pass

    work.add_done_callback(relay)
    return waiter


class RateLimiter:
    """A token bucket per client: ``burst`` requests at once, refilled at ``per_minute`` a minute."""

    def __init__(self, per_minute: float = 30.0, burst: int = 10, max_clients: int = 10_000):
        self.rate, self.burst, self.max_clients = per_minute / 60.0, burst, max_clients
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()
        self._lock = threading.Lock()

    def allow(self, client: str) -> float:
        """0 when the request may go ahead, else the seconds until it may."""
        now = time.monotonic()
        with self._lock:
            tokens, at = self._buckets.pop(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.rate)
            wait = 0.0 if tokens >= 1 else (1 - tokens) / self.rate
            self._buckets[client] = (tokens - 1 if wait == 0 else tokens, now)
            while len(self._buckets) > self.max_clients:      # the oldest clients are forgotten first
                self._buckets.popitem(last=False)
        return wait


# frame-ancestors 'none' and X-Frame-Options DENY: no page may frame this one (clickjacking)
PAGE_CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
# /docs and /redoc: Swagger UI and ReDoc served from this package (web/site.py, fastapi-offline's assets) with
# their inline bootstrap script; nothing is fetched from anywhere else
DOCS_CSP = ("default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
            "img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; object-src 'none'; base-uri 'none'; "
            "frame-ancestors 'none'")
API_CSP = "default-src 'none'; frame-ancestors 'none'"
DOCS_PATHS = ("/docs", "/redoc")


class SecurityHeaders:
    """Adds the security headers to every answer, cached ones and errors included (plain ASGI, like BodyCap)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope.get("path", "")
        csp = DOCS_CSP if path.startswith(DOCS_PATHS) else API_CSP if path.startswith("/api/") else PAGE_CSP
        extra = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                 (b"referrer-policy", b"no-referrer"), (b"content-security-policy", csp.encode()),
                 (b"cross-origin-opener-policy", b"same-origin")]

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                message = {**message, "headers": list(message.get("headers", [])) +
                           [(k, v) for k, v in extra if k not in names]}
            await send(message)

        await self.app(scope, receive, send_with_headers)
