"""One errors-knowledge-base entry as terminal text: `runlocal errors ID`."""

from __future__ import annotations

import textwrap


def render_entry(entry, width: int = 100) -> str:
    """Title, what causes it, each way out with its command per runtime, and related entries."""
    wrap = textwrap.TextWrapper(width=max(40, width - 2), initial_indent="  ", subsequent_indent="  ")
    lines = [f"{entry.id}: {entry.title}", f"  category: {entry.category} · runtimes: {', '.join(entry.runtimes)}",
             "", "Cause:", wrap.fill(" ".join(entry.cause.split())), "", "What to do:"]
    for i, sol in enumerate(entry.solutions, 1):
        lines.append(f"  {i}. {sol.title}")
        for runtime, command in sol.commands.items():
            lines.append(f"     {runtime}: {command}")
    if entry.alternatives:
        lines += ["", "Also:"] + [wrap.fill(" ".join(a.split())) for a in entry.alternatives]
    if entry.related:
        lines += ["", f"Related: {', '.join(entry.related)}"]
    return "\n".join(lines)


__all__ = ["render_entry"]
