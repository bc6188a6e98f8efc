"""The /dream red-team sets (tests/dream_redteam/) through the program's checks alone: each item alone on a fresh
state of its scenario's root. The frozen set (`items.jsonl`): at most 10 % of the wrong items may be accepted and
at most 8 % of the true ones refused. The first attack round (`attack-1.jsonl`, written against the verifier with
its code in hand; the verifier was then fixed for what the record can decide): at most 20 % accepted (what is
left needs a reader: a lesson's meaning, a diagnosis refuted later) and 10 % refused. The second round
(`attack-2.jsonl`, against the verifier after the first): mostly meaning only a reader can judge (a flipped
order, a pasted claim, a guess, a number said of something else), so the program alone still accepts most of its
wrong items; the bars keep what it does catch (at most 72 % accepted, 15 % refused) and the second reading does
the rest (docs/dream.md). The third round (`attack-3.jsonl`, frozen before it was run, a new scenario
`shutterbox`): the program alone accepts nearly all of its wrong items (meaning only the second reading
judges); its test is a guard, not a bar: no entry may go to the wrong side that was not there when it was
last measured (docs/dream.md), so the count of wrong items accepted and of true items refused cannot rise. The
failure message lists every entry on the wrong side, with the program's reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import SHARED_TRANSCRIPTS
from redteam_harness import SET, Outcome, Scenario, Tally, build_scenario, check_entry, load_entries

ENTIRE = SHARED_TRANSCRIPTS / "entire"
WRONG_ACCEPTED, TRUE_REFUSED = 0.10, 0.08
ATTACK_WRONG_ACCEPTED, ATTACK_TRUE_REFUSED = 0.20, 0.10
SECOND_ATTACK_WRONG_ACCEPTED, SECOND_ATTACK_TRUE_REFUSED = 0.72, 0.15
# The third round's entries on the wrong side through the program alone, as measured (docs/dream.md, "Measured").
THIRD_ATTACK_WRONG_ACCEPTED = frozenset(
    "w-301 w-303 w-304 w-306 w-307 w-308 w-309 w-310 w-311 w-313 w-314 w-315 w-316 w-317 w-318 w-320 w-321 w-322 "
    "w-323 w-324 w-326 w-327 w-328 w-330 w-331 w-332 w-333 w-335 w-336 w-337 w-338 w-339 w-342 w-343 w-381 w-382 "
    "w-383 w-384 w-385 w-391 w-392".split()
)
THIRD_ATTACK_TRUE_REFUSED = frozenset({"t-304"})


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
def third_attack_outcomes(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[dict[str, object], Outcome]]:
    return _outcomes(load_entries(SET / "attack-3.jsonl"), tmp_path_factory.mktemp("attack-3"))


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


def test_the_third_attack_round_does_not_regress(
    third_attack_outcomes: list[tuple[dict[str, object], Outcome]],
) -> None:
    """No wrong item of the third round is accepted, and no true one refused, that was not when it was last
    measured: the counts (41 of 48 wrong accepted, 1 of 30 true refused, with ../shared) cannot rise."""
    tally, wrong_side = _rates(third_attack_outcomes)
    assert tally.wrong >= 40 and tally.true >= 20, "the third round is smaller than it should be"
    listing = "\n".join(wrong_side)
    accepted = {str(e["id"]) for e, o in third_attack_outcomes if e["label"] == "wrong" and o.accepted}
    refused = {str(e["id"]) for e, o in third_attack_outcomes if e["label"] == "true" and not o.accepted}
    assert not accepted - THIRD_ATTACK_WRONG_ACCEPTED, f"newly accepted wrong items:\n{listing}"
    assert not refused - THIRD_ATTACK_TRUE_REFUSED, f"newly refused true items:\n{listing}"
    assert tally.wrong_accepted <= len(THIRD_ATTACK_WRONG_ACCEPTED)
    assert tally.true_refused <= len(THIRD_ATTACK_TRUE_REFUSED)


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
