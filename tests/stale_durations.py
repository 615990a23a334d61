"""The entries of tests/durations.json (the slow marker's record, conftest.py) that name no test or fixture any more.

    python3 tests/stale_durations.py                  # list them
    python3 tests/stale_durations.py --drop           # and write the file without them
    python3 -m pytest --collect-only -q -p no:xdist > ids.txt; python3 tests/stale_durations.py --collected ids.txt

An entry's key is conftest.duration_key's "<file name>::<class>::<test>[<parameters>]" or conftest.fixture_key's
"<file name>::<fixture> (fixture setup)". Read from the source alone (no collection, so a test can afford it): the file
must be a test file under tests/, and the test function (the fixture, the class) must be defined in it. A parameter set
a test no longer has is found only against a collection's node ids (--collected), whose test keys then are checked
exactly. A recorded entry that is no longer there only misleads: the slow marker is read by test name, and a renamed
test loses its record (it is timed again by the next ``--write-durations``).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
DURATIONS = TESTS / "durations.json"
FIXTURE = " (fixture setup)"


def _defines(source: str, kind: str, name: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?{kind}\s+{re.escape(name)}\b", source, re.MULTILINE) is not None


def _sources() -> dict[str, str]:
    """Each test file's source by its file name (a duration key names the file, not its folder), and each folder's
    conftest.py by the folder's name (where a fixture defined there is keyed)."""
    out: dict[str, str] = {}
    for path in [*TESTS.rglob("test_*.py"), *TESTS.rglob("conftest.py")]:
        key = path.parent.name if path.name == "conftest.py" else path.name
        out[key] = out.get(key, "") + path.read_text(encoding="utf-8")   # two files of one name: either defines it
    return out


def stale_entries(recorded: dict[str, float], collected: set[str] | None = None) -> list[str]:
    """The keys of ``recorded`` no current test or fixture answers to; ``collected``: duration keys of a collection's
    node ids, which then decide every test key (parameters included)."""
    sources = _sources()
    stale = []
    for key in recorded:
        where, _, rest = key.partition("::")
        if where == "<plugin>":                 # a plugin's fixture: not ours to check
            continue
        source = sources.get(where)
        if source is None:
            stale.append(key)
        elif rest.endswith(FIXTURE):
            if not _defines(source, "def", rest[:-len(FIXTURE)]):
                stale.append(key)
        elif collected is not None:
            if key not in collected:
                stale.append(key)
        else:
            *classes, test = rest.split("[", 1)[0].split("::")
            if not _defines(source, "def", test) or not all(_defines(source, "class", c) for c in classes):
                stale.append(key)
    return stale


def collected_keys(text: str) -> set[str]:
    """Duration keys of the node ids a ``pytest --collect-only -q`` printed (one "path::name" a line)."""
    return {f"{Path(line.split('::', 1)[0]).name}::{line.split('::', 1)[1]}"
            for line in (raw.strip() for raw in text.splitlines()) if "::" in line and not line.startswith(" ")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--drop", action="store_true", help=f"write {DURATIONS.name} without the stale entries")
    parser.add_argument("--collected", type=Path, help="a `pytest --collect-only -q` output: test keys checked exactly")
    args = parser.parse_args(argv)
    recorded = json.loads(DURATIONS.read_text(encoding="utf-8"))
    collected = collected_keys(args.collected.read_text(encoding="utf-8")) if args.collected else None
    stale = stale_entries(recorded, collected)
    for key in stale:
        print(key)
    print(f"{len(stale)} of {len(recorded)} entries stale")
    if args.drop and stale:
        kept = {k: v for k, v in recorded.items() if k not in set(stale)}
        DURATIONS.write_text(json.dumps(kept, indent=0) + "\n", encoding="utf-8")   # as conftest writes it
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
