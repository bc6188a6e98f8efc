"""The /dream red-team sets (tests/dream_redteam/) through the program's checks alone: each item alone on a fresh
state of its scenario's root. The frozen set (`items.jsonl`): at most 10 % of the wrong items may be accepted and
at most 8 % of the true ones refused. The first attack round (`attack-1.jsonl`, written against the verifier with
its code in hand; the verifier was then fixed for what the record can decide): at most 20 % accepted (what is
left needs a reader: a lesson's meaning, a diagnosis refuted later) and 10 % refused. The second round
(`attack-2.jsonl`, against the verifier after the first): mostly meaning only a reader can judge (a flipped
order, a pasted claim, a guess, a number said of something else), so the program alone still accepts most of its
wrong items; the bars keep what it does catch (at most 72 % accepted, 15 % refused) and the second reading does
the rest (docs/dream.md). The failure message lists
every entry on the wrong side, with the program's reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SHARED_TRANSCRIPTS
from redteam_harness import SET, Outcome, Scenario, Tally, build_scenario, check_entry, load_entries

ENTIRE = SHARED_TRANSCRIPTS / "entire"
WRONG_ACCEPTED, TRUE_REFUSED = 0.10, 0.08
ATTACK_WRONG_ACCEPTED, ATTACK_TRUE_REFUSED = 0.20, 0.10
SECOND_ATTACK_WRONG_ACCEPTED, SECOND_ATTACK_TRUE_REFUSED = 0.72, 0.15


def _outcomes(entries: list[dict[str, object]], base: Path) -> list[tuple[dict[str, object], Outcome]]:
    if not ENTIRE.is_dir():
        entries = [e for e in entries if e["scenario"] != "entire"]  # the real sessions are not here
    scenarios: dict[str, Scenario] = {
        name: build_scenario(name, base / "roots", ENTIRE) for name in sorted({str(e["scenario"]) for e in entries})
    }
    return [(e, check_entry(scenarios, e, base)) for e in entries]


@pytest.fixture(scope="module")
def attack_outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, object], Outcome]]:
    return _outcomes(load_entries(SET / "attack-1.jsonl"), tmp_path_factory.mktemp("attack"))


@pytest.fixture(scope="module")
def second_attack_outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, object], Outcome]]:
    return _outcomes(load_entries(SET / "attack-2.jsonl"), tmp_path_factory.mktemp("attack-2"))


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, object], Outcome]]:
    return _outcomes(load_entries(), tmp_path_factory.mktemp("redteam"))


def _rates(results: list[tuple[dict[str, object], Outcome]]) -> tuple[Tally, list[str]]:
    tally = Tally()
    wrong_side = []
    for entry, outcome in results:
        tally.add(entry, outcome)
        if (entry["label"] == "wrong") == outcome.accepted:
            wrong_side.append(f"{entry['id']} ({entry['label']}, {entry['class']}): {outcome.reason or 'accepted'}")
    return tally, wrong_side


def _assert_within(tally: Tally, wrong_side: list[str], wrong_accepted: float, true_refused: float) -> None:
    accepted, refused = tally.rates()
    listing = "\n".join(wrong_side)
    assert accepted <= wrong_accepted, f"{tally.wrong_accepted}/{tally.wrong} wrong items accepted:\n{listing}"
    assert refused <= true_refused, f"{tally.true_refused}/{tally.true} true items refused:\n{listing}"


def test_the_checks_refuse_wrong_items_and_keep_true_ones(outcomes: list[tuple[dict[str, object], Outcome]]) -> None:
    """Without ../shared only the hand-written scenarios run (their 43 wrong and 23 true items)."""
    tally, wrong_side = _rates(outcomes)
    assert tally.wrong >= 30 and tally.true >= 20, "the set is smaller than it should be"
    _assert_within(tally, wrong_side, WRONG_ACCEPTED, TRUE_REFUSED)


def test_the_first_attack_round_stays_caught(attack_outcomes: list[tuple[dict[str, object], Outcome]]) -> None:
    tally, wrong_side = _rates(attack_outcomes)
    if tally.wrong < 10:
        pytest.skip("the attack round is mostly on ../shared's real sessions, which are not here")
    _assert_within(tally, wrong_side, ATTACK_WRONG_ACCEPTED, ATTACK_TRUE_REFUSED)


def test_the_second_attack_round_keeps_what_the_program_catches(
    second_attack_outcomes: list[tuple[dict[str, object], Outcome]],
) -> None:
    tally, wrong_side = _rates(second_attack_outcomes)
    assert tally.wrong >= 40 and tally.true >= 20, "the second round is smaller than it should be"
    _assert_within(tally, wrong_side, SECOND_ATTACK_WRONG_ACCEPTED, SECOND_ATTACK_TRUE_REFUSED)


def test_every_class_of_attack_is_in_the_set() -> None:
    classes = {str(e["class"]) for e in load_entries() if e["label"] == "wrong"}
    for needed in (
        "quote-contradicts-statement",
        "role-label-dodge",
        "reversal-hidden-by-later-citation",
        "correction-word-swap",
        "evidence-outside-sessions",
        "summary-as-evidence",
        "markup-smuggling",
        "name-dotted-halves",
        "name-comment-or-string-only",
        "name-wrong-place",
        "lesson-fix-unrelated",
        "lesson-reverted",
        "rejection-reworded",
        "bare-answer-misread",
        "canned-text-as-person",
        "injected-instruction",
    ):
        assert needed in classes, needed


def test_the_hand_written_scenarios_need_nothing_outside_the_repository() -> None:
    here = Path(__file__).resolve().parent / "dream_redteam" / "scenarios"
    used = {str(e["scenario"]) for e in load_entries()} - {"entire"}
    assert used and all((here / name / "transcripts").is_dir() for name in used)
