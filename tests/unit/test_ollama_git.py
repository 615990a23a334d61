"""measurements/ollama_builds/ollama_git.release_tags: the release tags engine_map, flash_attention_map and make_map
read, in version order (not git's name order) and without release candidates, checked on a throw-away repository whose
tags are written here."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "measurements" / "ollama_builds"


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def test_release_tags_in_version_order_without_candidates(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "commit", "-q", "--allow-empty", "-m", "one")
    for tag in ("v0.10.0", "v0.9.1", "v0.5.13", "v0.30.0", "v0.11.8-rc1", "v0.11.8", "notes"):
        _git(tmp_path, "tag", tag)
    code = ("import sys, ollama_git as g; r = sys.argv[1]; print(' '.join(g.release_tags(r)));"
            "print(' '.join(g.release_tags(r, (0, 9, 1), (0, 30, 0))))")
    env = {**os.environ, "PYTHONPATH": str(FOLDER)}
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / ".git")], capture_output=True, text=True,
                         env=env, check=True).stdout.splitlines()
    # by hand: numeric order puts 0.9.1 before 0.10.0 (git's name order would not); -rc1 and "notes" are no releases
    assert out == ["v0.5.13 v0.9.1 v0.10.0 v0.11.8 v0.30.0", "v0.9.1 v0.10.0 v0.11.8"]
