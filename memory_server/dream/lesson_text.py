"""How a lesson of topics/lessons.md is headed (no imports: the session-start hook reads lessons too)."""

from __future__ import annotations

LESSON_HEADING_MAX = 100


def lesson_heading(statement: str) -> tuple[str, str]:
    """A long lesson as a heading and a paragraph, split at its first ": " or sentence end outside code spans
    ("After a merge changes a signature, update the test callers too: `go build` passes, but lint fails"; "...
    left the old arguments. Run the linter after a merge."); else all heading. The words stay as written; the
    paragraph starts with a capital."""
    if len(statement) <= LESSON_HEADING_MAX:
        return statement, ""
    in_code = False
    for i, ch in enumerate(statement):
        if ch == "`":
            in_code = not in_code
        elif in_code or not 20 <= i <= 2 * LESSON_HEADING_MAX:
            continue
        elif statement.startswith(": ", i) or _sentence_end(statement, i):
            rest = statement[i + 2 :].strip()
            return (statement[:i], _as_sentence(rest)) if rest else (statement, "")
    return statement, ""


def _as_sentence(text: str) -> str:
    """The paragraph after a heading starts as a sentence: "add the new arguments" -> "Add the new arguments"
    (a name in backticks or with capitals inside stays as written)."""
    word = text.split(" ", 1)[0]
    return text[:1].upper() + text[1:] if word.isalpha() and word.islower() else text


def _sentence_end(text: str, i: int) -> bool:
    """A full stop at `i` that ends a sentence: ". " before a capital or a code span ("e.g. the" is not one)."""
    return text.startswith(". ", i) and i + 2 < len(text) and (text[i + 2].isupper() or text[i + 2] == "`")
