"""Set aside the held-out fifth of the second collection round (run once, before any tuning on it).

Round 2 (collected 2026-11-25) is every record of ``round2.jsonl`` plus the drawn fifth (``held_out/round2.jsonl`` until
round 4, ``round2_scored_held_out.jsonl`` since). The held-out part
is ``ceil(n / 5)`` ids drawn with ``random.Random(SEED).sample`` from the sorted ids of the whole round, so anyone
can re-draw it: ``python split_round2.py --check`` re-draws and compares with the files. The round-1 hash split
(``held_out()`` before this round) had been looked at, so round 1 is tuning data from now on.

``python split_round2.py round2_all.jsonl`` wrote the two files from the collected round (the input is then removed).
"""
import json
import math
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
SEED = 20261125
# the drawn fifth was scored once (90 %) and moved to tuning with round 4; it keeps its own file so the draw stays checkable
TUNING, HELD_OUT = HERE / "round2.jsonl", HERE / "round2_scored_held_out.jsonl"


def draw(ids: list[str]) -> set[str]:
    ids = sorted(ids)
    return set(random.Random(SEED).sample(ids, math.ceil(len(ids) / 5)))


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--check":
        tuning, held = read(TUNING), read(HELD_OUT)
        ok = draw([r["id"] for r in tuning + held]) == {r["id"] for r in held}
        print(f"round 2: {len(tuning)} tuning + {len(held)} held out; re-drawn split {'matches' if ok else 'DIFFERS'}")
        return 0 if ok else 1
    records = read(Path(argv[0]))
    held = draw([r["id"] for r in records])
    write(TUNING, [r for r in records if r["id"] not in held])
    write(HELD_OUT, [r for r in records if r["id"] in held])
    print(f"{len(records)} records: {len(records) - len(held)} tuning, {len(held)} held out (seed {SEED})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
