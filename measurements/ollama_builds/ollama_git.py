"""The git reading the ollama_builds scripts share: one git command in a mirror of github.com/ollama/ollama, and the
release tags (vX.Y.Z without -rc) in version order."""

import re
import subprocess

RELEASE_TAG = re.compile(r"^v(\d+)\.(\d+)\.(\d+)$")


def git(repo: str, *args: str) -> str:
    """The standard output of ``git --git-dir repo args`` ("" where git fails, e.g. a path absent at a tag)."""
    return subprocess.run(["git", "--git-dir", repo, *args], capture_output=True, text=True, check=False).stdout


def release_tags(repo: str, first: tuple[int, int, int] = (0, 0, 0),
                 last_before: tuple[int, int, int] = (10**6, 0, 0)) -> list[str]:
    """The release tags ``first`` <= version < ``last_before``, oldest first."""
    keyed = sorted((tuple(int(x) for x in m.groups()), t) for t in git(repo, "tag").split()
                   if (m := RELEASE_TAG.match(t)))
    return [tag for key, tag in keyed if first <= key < last_before]
