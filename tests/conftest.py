"""Markers by kind, and ``slow`` for what takes over a second, so ``pytest -m "not slow"`` is the quick loop.

Kinds (one marker each, registered in pyproject.toml): ``unit`` (in-process, no recorded evidence),
``accuracy`` (the planners against recorded runs, public logs and the real libraries' own tables),
``integration`` (real processes, servers, databases) and ``browser`` (a real headless Chromium). A test file's
kind is its folder (tests/unit/, tests/accuracy/, tests/integration/, tests/browser/).
Accuracy, integration and browser tests are all ``slow``; so is any other test whose recorded duration
(tests/durations.json, written by ``pytest --write-durations``) is over ``SLOW_S``, and any test that needs a
module- or session-scoped fixture whose own setup was recorded over ``SLOW_S``: that cost is paid by whichever test
runs first, so marking only that one would pass it on to the next.
Under a ``-m`` that deselects every slow test (``-m "not slow"``), the slow kinds' folders are not collected at all:
importing them (and the schemathesis cases generated from the API's schema) cost more than the quick set's tests.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import shutil
import tempfile
import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytest_plugins = ["pgserver"]      # the PostgreSQL cluster and the store_url fixture of the store tests

HERE = Path(__file__).resolve().parent
DURATIONS = HERE / "durations.json"
SLOW_S = 1.0
KINDS = ("unit", "accuracy", "integration", "browser")
SLOW_KINDS = {"accuracy", "integration", "browser"}
_HOME = pytest.StashKey[tuple[str, str | None]]()   # this run's RUNLOCAL_HOME and the one it replaced
_SHELL = pytest.StashKey[dict[str, str]]()           # the calling shell's other RUNLOCAL_* variables, set aside
# kept from the calling shell: RUNLOCAL_COMPUTE_TABLE=0 only turns the shipped simulations' lookup off, the answers
# the same by construction (runtimes/compute_table.py: "the table can make a plan faster, never different");
# RUNLOCAL_MEASUREMENTS says where the records the tests score are, outside a checkout (evidence/__init__.py)
SHELL_KEPT = ("RUNLOCAL_COMPUTE_TABLE", "RUNLOCAL_MEASUREMENTS")


def kind_of(path: Path) -> str:
    """The folder's kind (tests/<kind>/…); a test file outside those folders counts as unit."""
    parent = path.parent.name
    return parent if parent in KINDS else "unit"


def duration_key(path: Path | str, nodeid: str) -> str:
    """file name :: test (class, name, parameters): the same before and after a file moves to its kind's folder."""
    return f"{Path(path).name}::{nodeid.split('::', 1)[-1]}"


@pytest.fixture(autouse=True, scope="session")
def _site_without_its_warm_up() -> Iterator[None]:
    """An app started in-process (``with TestClient(create_app(...))``) runs the site's start-up, which fits the
    whole catalog sweep in a background thread (4 s of CPU on 2 cores) for the pages a server's first visitors ask:
    none of the in-process tests waits for it, and its CPU landed on whichever tests ran beside it. Here it does
    nothing; a test that reads the sweep builds it when it asks, and `runlocal serve` as a process
    (tests/integration, tests/browser) still warms up."""
    from runlocal.web import site

    async def no_warm_up() -> None:
        return None

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(site, "_warm_up", no_warm_up)
        yield


def fixture_key(fixturedef: pytest.FixtureDef) -> str:
    """Where a fixture is defined (file or conftest folder name) :: its name, marked as a fixture's key."""
    return f"{Path(fixturedef.baseid).name or '<plugin>'}::{fixturedef.argname} (fixture setup)"


def deselects_all(markexpr: str, present: set[str], absent: frozenset[str] | set[str] = frozenset()) -> bool:
    """Whether ``-m markexpr`` deselects every test that carries the marks ``present`` and not those ``absent``,
    whatever other marks it has: each other name in the expression is tried both present and absent.
    False (collect) for expressions with keyword arguments or over 8 other names."""
    tokens = re.findall(r"[()]|[^\s()]+", markexpr)
    if not tokens or any("=" in t for t in tokens):
        return False
    others = sorted({t for t in tokens if t not in ("(", ")", "and", "or", "not")} - present - absent)
    if len(others) > 8:
        return False
    for choice in itertools.product((True, False), repeat=len(others)):
        value = dict(zip(others, choice, strict=True)) | dict.fromkeys(present, True) | dict.fromkeys(absent, False)
        expr = " ".join(str(value[t]) if t in value else t for t in tokens)
        try:
            if eval(expr, {"__builtins__": {}}):          # only True/False, and/or/not and parentheses
                return False
        except SyntaxError:
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A slow kind's folder is not collected when ``-m`` would deselect all it holds (its tests carry their kind
    and ``slow``, never another kind's marker)."""
    kind = collection_path.name
    if (collection_path.parent == HERE and kind in SLOW_KINDS
            and deselects_all(config.option.markexpr, {kind, "slow"}, set(KINDS) - {kind})):
        return True
    return None


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    parser.addoption("--write-durations", action="store_true",
                     help=f"record each test's setup + call seconds into {DURATIONS.name} (the slow marker reads it)")
    if not pluginmanager.has_plugin("xdist"):
        # pyproject's addopts ask pytest-xdist for one worker per core (`-n auto --dist loadfile`); with the plugin
        # off (`-p no:xdist`) or not installed, those two options are accepted and the tests run in this process
        group = parser.getgroup("xdist", "pytest-xdist absent: its options accepted and ignored")
        # `_addoption`: a lowercase short option, as pytest-xdist itself registers `-n`
        group._addoption("-n", "--numprocesses", dest="numprocesses", default=None, help="ignored: no pytest-xdist")
        group.addoption("--dist", dest="dist", default="no", help="ignored: no pytest-xdist")


def pytest_configure(config: pytest.Config) -> None:
    """Each pytest process (each xdist worker too) gets its own RUNLOCAL_HOME: the in-process apps and the CLI's
    children open the default benchmark store there (config.data_dir), and two workers creating or filling one
    SQLite file at once would lock each other out or count each other's rows. Never the user's own store.
    Every other RUNLOCAL_* variable of the calling shell is set aside for the run (review23 #11): config.py reads
    RUNLOCAL_DB_URL before data_dir (a developer's own server would get the tests' store writes, from every worker at
    once), and the tokens, RUNLOCAL_DEBUG … would change what a test sees; a test that needs one
    sets it with monkeypatch. SHELL_KEPT stays."""
    home = tempfile.mkdtemp(prefix="runlocal-test-home-")
    config.stash[_HOME] = (home, os.environ.get("RUNLOCAL_HOME"))
    os.environ["RUNLOCAL_HOME"] = home
    shell = {k: v for k, v in os.environ.items()
             if k.startswith("RUNLOCAL_") and k != "RUNLOCAL_HOME" and k not in SHELL_KEPT}
    config.stash[_SHELL] = shell
    for name in shell:
        del os.environ[name]


def pytest_unconfigure(config: pytest.Config) -> None:
    home, before = config.stash.get(_HOME, (None, None))
    if home:
        shutil.rmtree(home, ignore_errors=True)
        if before is None:
            os.environ.pop("RUNLOCAL_HOME", None)
        else:
            os.environ["RUNLOCAL_HOME"] = before
    os.environ.update(config.stash.get(_SHELL, {}))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    recorded = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    for item in items:
        kind = kind_of(item.path)
        item.add_marker(getattr(pytest.mark, kind))
        if (kind in SLOW_KINDS or recorded.get(duration_key(item.path, item.nodeid), 0.0) > SLOW_S
                or shared_setup_s(item, recorded) > SLOW_S):
            item.add_marker(pytest.mark.slow)


def shared_setup_s(item: pytest.Item, recorded: dict[str, float]) -> float:
    """The longest recorded setup among the module- and session-scoped fixtures this test needs."""
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return max((recorded.get(fixture_key(fd), 0.0) for fds in defs.values() for fd in fds if fd.scope != "function"),
               default=0.0)


_DURATIONS: dict[str, float] = {}


def _cpu_s() -> float:
    """CPU seconds of this process (all threads) and of the children it has waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextmanager
def _timed(key: str) -> Iterator[None]:
    """Adds to ``_DURATIONS[key]`` the lesser of wall-clock and CPU seconds: the wall clock of a machine that other
    work shares counts the time waiting for a core (three times the CPU time here, at a load of 6 on 2 cores),
    the CPU time alone would miss waiting on a disk, a socket or children running side by side."""
    wall, cpu = time.perf_counter(), _cpu_s()
    try:
        yield
    finally:
        _DURATIONS[key] = _DURATIONS.get(key, 0.0) + min(time.perf_counter() - wall, _cpu_s() - cpu)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, object, object]:
    with _timed(duration_key(item.path, item.nodeid)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    with _timed(duration_key(item.path, item.nodeid)):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef, request: pytest.FixtureRequest) -> Generator[None, object, object]:
    if fixturedef.scope == "function":            # paid by each test, inside its own setup
        return (yield)
    with _timed(fixture_key(fixturedef)):
        return (yield)


_NEWLY_SLOW: list[str] = []


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:
    """Under pytest-xdist the tests ran in the workers: each sends back what it timed (below), merged here."""
    for key, seconds in getattr(node, "workeroutput", {}).get("durations", {}).items():
        _DURATIONS[key] = _DURATIONS.get(key, 0.0) + seconds


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:           # an xdist worker: the controller alone writes the file
        workeroutput["durations"] = dict(_DURATIONS)
        return
    if not session.config.getoption("--write-durations") or not _DURATIONS:
        return
    old = json.loads(DURATIONS.read_text(encoding="utf-8")) if DURATIONS.is_file() else {}
    merged = {**old, **{k: round(v, 3) for k, v in _DURATIONS.items()}}
    DURATIONS.write_text(json.dumps(dict(sorted(merged.items())), indent=0) + "\n", encoding="utf-8")
    _NEWLY_SLOW.extend(k for k, v in merged.items() if v > SLOW_S and old.get(k, 0.0) <= SLOW_S)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """A cost shared by several tests (a cache, an import) lands on the first of them that runs: once that one
    is slow, the next pays it. So the recording is repeated (``-m "not slow" --write-durations``) until no test
    crosses the line."""
    if _NEWLY_SLOW:
        terminalreporter.write_line(f"{DURATIONS.name}: {len(_NEWLY_SLOW)} now over {SLOW_S} s (slow from the next "
                                    "run; record again until none is): " + ", ".join(_NEWLY_SLOW))
