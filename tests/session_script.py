"""Claude Code transcripts written by hand, record by record, in the shapes real sessions have (user and
assistant messages, tool calls and results, rejections, AskUserQuestion answers, compaction summaries and
Claude Code's own notices), for tests that need sessions of a given story."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from memory_server.files.scaffold import init_root

REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
    "the new_string was NOT written to the file). To tell you how to proceed, the user said:\n"
)


class Script:
    """One session's transcript, written line by line; every method returns the JSONL line it wrote."""

    def __init__(self, session_id: str, start: dt.datetime, cwd: str = "/home/dev/project") -> None:
        self.session_id = session_id
        self.clock = start
        self.cwd = cwd
        self.records: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.calls = 0

    def _add(self, record: dict[str, Any]) -> int:
        self.clock += dt.timedelta(seconds=30)
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.session_id}/{len(self.records)}"))
        base = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": "2.1.30",
            "gitBranch": "main",
            "uuid": uid,
            "timestamp": self.clock.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
        }
        self.records.append({**base, **record})
        self.parent = uid
        return len(self.records)

    def user(self, text: str, **extra: Any) -> int:
        return self._add({"type": "user", "message": {"role": "user", "content": text}, **extra})

    def meta(self, text: str) -> int:
        """Claude Code's own text in the person's place (a skill's body, a notice)."""
        return self.user(text, isMeta=True)

    def compact_summary(self, text: str) -> int:
        body = "This session is being continued from a previous conversation that ran out of context. " + text
        return self.user(body, isCompactSummary=True)

    def assistant(self, text: str) -> int:
        mid = f"msg_{len(self.records)}"
        content = [{"type": "text", "text": text}]
        return self._add({"type": "assistant", "message": {"id": mid, "role": "assistant", "content": content}})

    def thinking_then_text(self, thinking: str, text: str) -> int:
        """One API message written as two records (its thinking, then its text); returns the text's line."""
        mid = f"msg_{len(self.records)}"
        block = {"type": "thinking", "thinking": thinking}
        self._add({"type": "assistant", "message": {"id": mid, "role": "assistant", "content": [block]}})
        text_block = {"type": "text", "text": text}
        return self._add({"type": "assistant", "message": {"id": mid, "role": "assistant", "content": [text_block]}})

    def summary_of(self, leaf: str, title: str) -> int:
        """A session title record (Claude Code writes them for other sessions too, at the top of a file)."""
        self.records.append({"type": "summary", "summary": title, "leafUuid": leaf})
        return len(self.records)

    def _use(self, name: str, args: dict[str, Any]) -> tuple[int, str]:
        self.calls += 1
        tid = f"toolu_{self.session_id[:8]}_{self.calls}"
        content = [{"type": "tool_use", "id": tid, "name": name, "input": args}]
        line = self._add(
            {"type": "assistant", "message": {"id": f"msg_{tid}", "role": "assistant", "content": content}}
        )
        return line, tid

    def _result(self, tid: str, text: str, *, error: bool = False, data: Any = None) -> int:
        block = {"type": "tool_result", "tool_use_id": tid, "content": text, "is_error": error}
        extra = {"toolUseResult": data} if data is not None else {}
        return self._add({"type": "user", "message": {"role": "user", "content": [block]}, **extra})

    def bash(self, command: str, output: str, *, error: bool = False) -> tuple[int, int]:
        line, tid = self._use("Bash", {"command": command, "description": "run"})
        data = {"stdout": output, "stderr": "", "interrupted": False}
        return line, self._result(tid, output if not error else f"Exit code 1\n{output}", error=error, data=data)

    def read(self, path: str, content: str) -> tuple[int, int]:
        line, tid = self._use("Read", {"file_path": f"{self.cwd}/{path}"})
        numbered = "\n".join(f"{n:>6}→{ln}" for n, ln in enumerate(content.splitlines(), 1))
        return line, self._result(tid, numbered)

    def edit(self, path: str, old: str, new: str) -> tuple[int, int]:
        line, tid = self._use("Edit", {"file_path": f"{self.cwd}/{path}", "old_string": old, "new_string": new})
        return line, self._result(tid, f"The file {self.cwd}/{path} has been updated.")

    def write(self, path: str, content: str) -> tuple[int, int]:
        line, tid = self._use("Write", {"file_path": f"{self.cwd}/{path}", "content": content})
        return line, self._result(tid, f"File created successfully at: {self.cwd}/{path}")

    def reject(self, command: str, feedback: str) -> tuple[int, int]:
        """A tool call the person rejected, with their feedback."""
        line, tid = self._use("Bash", {"command": command})
        return line, self._result(tid, REJECTED + feedback, error=True)

    def ask(self, question: str, answer: str) -> tuple[int, int]:
        args = {"questions": [{"question": question, "header": "Choice", "options": [], "multiSelect": False}]}
        line, tid = self._use("AskUserQuestion", args)
        text = (
            f'User has answered your questions: "{question}"="{answer}". '
            "You can now continue with the user's answers in mind."
        )
        return line, self._result(tid, text, data={"questions": args["questions"], "answers": {question: answer}})

    def clarify(self, question: str, picked: str, notes: str) -> tuple[int, int]:
        """An AskUserQuestion the person chose to discuss instead of answering: Claude Code's canned text,
        with the option they had picked and their notes."""
        args = {"questions": [{"question": question, "header": "Choice", "options": [], "multiSelect": False}]}
        line, tid = self._use("AskUserQuestion", args)
        canned = (
            "The user wants to clarify these questions.\n    This means they may have additional information, "
            "context or questions for you.\n    Take their response into account and then reformulate the "
            "questions if appropriate.\n    Start by asking them what they would like to clarify.\n\n"
            f'    Questions asked:\n- "{question}"\n  Answer: {picked}\n  User notes: {notes}'
        )
        return line, self._result(tid, REJECTED + canned, error=True)

    def save(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.session_id}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in self.records), encoding="utf-8")
        return path


def project_root(base: Path, scripts: Iterable[Script], files: dict[str, str]) -> Path:
    """A memory root at `base/project` in a git repository of its own, with `files` (topics or project files,
    by path) written and committed; the scripts' transcripts are saved in `base/transcripts` (compress them
    with MEMORY_TRANSCRIPTS_DIR set to that folder)."""
    for script in scripts:
        script.save(base / "transcripts")
    root = base / "project"
    init_root(root)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for args in (("init", "-q"), ("add", "-A"), ("commit", "-qm", "start")):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root, check=True,
            capture_output=True,
        )  # fmt: skip
    return root
