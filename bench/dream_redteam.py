"""The /dream red-team set through the program's checks: every entry's outcome and the rates per class.

    python bench/dream_redteam.py [--set DIR] [--items FILE] [--json OUT]

DIR is a set in the format of tests/dream_redteam/ (the default); FILE is the file of its entries (default
items.jsonl, the frozen set; attack-1.jsonl, attack-2.jsonl, attack-3.jsonl are the attack rounds). Entries on
the 16 real sessions need ../shared (or MEMORY_SERVER_SHARED) and are left out without it.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import redteam_harness as harness  # noqa: E402
from conftest import SHARED_TRANSCRIPTS  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", type=Path, default=harness.SET, help="the set's folder (items.jsonl, scenarios/)")
    parser.add_argument("--items", default="items.jsonl", help="the file of entries in the set's folder")
    parser.add_argument("--json", type=Path, help="also write every outcome here")
    args = parser.parse_args()
    harness.SET = args.set
    entire = SHARED_TRANSCRIPTS / "entire"
    entries = harness.load_entries(args.set / args.items)
    if not entire.is_dir():
        print(f"left out: the entries on the real sessions ({entire} is not here)")
        entries = [e for e in entries if e["scenario"] != "entire"]
    started = time.monotonic()
    work = Path(tempfile.mkdtemp(prefix="redteam-"))
    names = sorted({e["scenario"] for e in entries})
    scenarios = {name: harness.build_scenario(name, work / "roots", entire) for name in names}
    total, by_class = harness.Tally(), collections.defaultdict[str, harness.Tally](harness.Tally)
    rows = []
    for entry in entries:
        outcome = harness.check_entry(scenarios, entry, work)
        total.add(entry, outcome)
        by_class[entry["class"]].add(entry, outcome)
        wrong_side = (entry["label"] == "wrong") == outcome.accepted
        rows.append({**{k: entry[k] for k in ("id", "label", "class")}, "accepted": outcome.accepted,
                     "reason": outcome.reason, "wrong_side": wrong_side})  # fmt: skip
        mark = "!!" if wrong_side else "ok"
        print(f"{mark} {entry['id']} {entry['label']:5} {entry['class']:36} {outcome.reason[:110] or 'accepted'}")
    accepted, refused = total.rates()
    print(f"\nwrong items accepted: {total.wrong_accepted}/{total.wrong} ({accepted:.1%})")
    print(f"true items refused:   {total.true_refused}/{total.true} ({refused:.1%})")
    print(f"{len(entries)} entries in {time.monotonic() - started:.0f} s\n")
    for name, tally in sorted(by_class.items()):
        counts = f"wrong accepted {tally.wrong_accepted}/{tally.wrong}  true refused {tally.true_refused}/{tally.true}"
        print(f"  {name:36} {counts}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "wrong_accepted": accepted, "true_refused": refused}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
