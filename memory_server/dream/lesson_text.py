"""How a lesson of topics/lessons.md is headed (no imports: the session-start hook reads lessons too)."""

from __future__ import annotations

LESSON_HEADING_MAX = 100


def lesson_heading(statement: str) -> tuple[str, str]:
    """A long lesson as a heading and a paragraph, split at its first ": " outside code spans ("After a merge
    changes a signature, update the test callers too: `go build` passes, but lint fails"); else all heading."""
    if len(statement) <= LESSON_HEADING_MAX:
        return statement, ""
    in_code = False
    for i, ch in enumerate(statement):
        if ch == "`":
            in_code = not in_code
        elif not in_code and statement.startswith(": ", i) and 20 <= i <= 2 * LESSON_HEADING_MAX:
            rest = statement[i + 2 :].strip()
            return (statement[:i], rest) if rest else (statement, "")  # the words as written: no case changed
    return statement, ""
