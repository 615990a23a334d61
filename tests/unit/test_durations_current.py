"""tests/durations.json names only tests and fixtures that exist (tests/stale_durations.py: the source-only check; the
parameter sets are checked against a collection by hand, `--collected`)."""

from __future__ import annotations

import json

from stale_durations import DURATIONS, collected_keys, stale_entries


def test_no_recorded_entry_is_stale():
    assert stale_entries(json.loads(DURATIONS.read_text(encoding="utf-8"))) == []


def test_a_renamed_test_a_gone_file_and_a_gone_fixture_are_found():
    made_up = {"test_durations_current.py::test_no_recorded_entry_is_stale": 0.1,              # this file's own: kept
               "test_durations_current.py::test_no_recorded_entry_is_stale[x]": 0.1,           # parameters unchecked
               "test_durations_current.py::test_renamed_away": 0.1,
               "test_durations_current.py::TestGone::test_no_recorded_entry_is_stale": 0.1,    # no such class
               "test_gone_file.py::test_x": 0.1,
               "test_durations_current.py::gone (fixture setup)": 0.1,
               "<plugin>::anything (fixture setup)": 0.1}
    assert stale_entries(made_up) == ["test_durations_current.py::test_renamed_away",
                                      "test_durations_current.py::TestGone::test_no_recorded_entry_is_stale",
                                      "test_gone_file.py::test_x", "test_durations_current.py::gone (fixture setup)"]
    # against a collection, a parameter set no test has any more is stale too
    ids = "tests/unit/test_durations_current.py::test_no_recorded_entry_is_stale\n\n3 tests collected in 0.01s\n"
    assert collected_keys(ids) == {"test_durations_current.py::test_no_recorded_entry_is_stale"}
    assert "test_durations_current.py::test_no_recorded_entry_is_stale[x]" in stale_entries(made_up, collected_keys(ids))
