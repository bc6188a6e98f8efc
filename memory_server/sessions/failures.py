"""Reading command output and commands: the informative error line, commit messages, what a command is.

Pure functions over strings, shared by `events.py` (which finds failures and their fixes) and the digest.

- `error_line(output)` picks the one line of a failed command's output that says what went wrong: a
  `--- FAIL:` line, a compiler-style `file.go:12:3: message`, `panic:`, the last line of a Python
  traceback, an `Error:` line; never `=== RUN`, `too many errors`, `ERROR task failed`, `exit status 1`
  or a bare `FAIL`. Falls back to `exit code N`.
- `looks_like_error(text)` tells whether pasted text (a user's message) holds such a line.
- `commit_messages(command)` returns the messages of the `git commit -m …` calls in a shell command,
  heredocs (`-m "$(cat <<'EOF' … EOF)"`) included.
- `command_key(command)` is what a retry shares with the first run: the program and its subcommand of the
  command's last step, with `cd`, environment assignments and flags stripped ("go test", "mise run").
- `harness_error(text)` is True for Claude Code's own tool errors (file not read yet, rejected,
  interrupted, sibling call errored): not failures of the project.
- `normalise_error(line)` is an error line without what differs between two occurrences of one mistake (file
  positions, paths, hashes, numbers): what a lesson and the failure hook compare.
"""

from __future__ import annotations

import re
import shlex

# Lines that look like errors but say nothing about what failed.
_NOISE = re.compile(
    r"(?i)^(?:=== (?:RUN|PAUSE|CONT|NAME)\b|.*\btoo many errors\b|.*\bERROR task failed\b|task: Failed to run task"
    r"|exit status \d+$|FAIL$|FAIL\s+\S+\s+[\d.]+s$|ok\s|PASS$|make(?:\[\d+\])?: \*\*\*|error: script .* exited"
    r"|npm ERR! (?:code|errno|A complete log|Lifecycle)|Exit code \d+$|\[[\w:-]+\] \$ )"
)
_GO_FAIL = re.compile(r"^\s*--- FAIL: ")
_COMPILER = re.compile(r"^\s*(?:\./)?[\w./@+-]+\.[A-Za-z]{1,5}:\d+(?::\d+)?:\s*[^\s:#]")  # not Go's ": # pkg" header
_RUST_TS = re.compile(r"^\s*(?:error(?:\[E\d+\])?:|error TS\d+:)")
_PANIC = re.compile(r"^\s*(?:panic:|fatal error:|fatal:)")
_EXCEPTION = re.compile(r"^\s*(?:E {3})?[\w.]*(?:Error|Exception|Failure)\b(?::|$)")  # pytest marks its lines "E   "
_ERROR_WORD = re.compile(r"(?i)^\s*(?:\w+\s)?(?:error|err)\b[:!]")
_LOOSE = re.compile(
    r"(?i)\b(?:error|exception|failed|failure|not found|no such|cannot|can't|denied|invalid|refused|undefined)\b"
)
_EXIT = re.compile(r"(?i)\bexit (?:code|status)[:\s]+(-?[1-9]\d*)")
_TEST_LOG = re.compile(r"^\s+\w[\w./-]*_test\.go:\d+: \S")

_HARNESS = re.compile(
    r"(?i)^(?:<tool_use_error>)?\s*(?:Error: )?(?:File has not been read yet|File has been (?:unexpectedly )?modified"
    r"|The user doesn't want to|User rejected|The user has rejected|\[Request interrupted|Sibling tool call errored"
    r"|Interrupted by user|Permission to use \w+ has been denied|Claude requested permissions"
    r"|Hook \w+ blocked|String to replace not found|Found \d+ matches of the string to replace"
    r"|No changes to make|File does not exist|Path does not exist|InputValidationError)"
)


def harness_error(text: str) -> bool:
    """True for an error Claude Code's tool layer produced itself, not the project's code or commands."""
    return bool(_HARNESS.match(text.strip()))


def normalise_error(error: str) -> str:
    """An error line without what differs between occurrences: file positions, hashes, numbers, paths."""
    text = re.sub(r"^\s*(?:[\w./-]+\.\w+:\d+(?::\d+)?:\s*)+", "", error)  # go/python style file:line:col:
    text = re.sub(r"(?<![\w/])(?:/[\w.@+-]+){2,}/?", "<path>", text)
    text = re.sub(r"\b[0-9a-f]{7,64}\b", "<hash>", text)
    text = re.sub(r"\d+(?:\.\d+)?", "<n>", text)
    return " ".join(text.casefold().split()).strip(" .:;")[:200]


def _candidates(lines: list[str]) -> list[str]:
    return [ln for ln in lines if ln.strip() and not _NOISE.match(ln.strip())]


def error_line(output: str) -> str:
    """The informative line of a failed command's output (see module docstring); "" for empty output."""
    return re.sub(r"^E {3}\s*", "", _error_line(output))


def _error_line(output: str) -> str:
    raw = [ln.rstrip() for ln in re.sub(r"</?tool_use_error>", "", output).splitlines()]
    lines = _candidates(raw)
    for pattern in (_GO_FAIL, _PANIC):
        hit = next((ln for ln in lines if pattern.match(ln)), None)
        if hit:
            return _with_detail(hit, lines)
    if any(ln.startswith("Traceback") for ln in lines):
        hit = next((ln for ln in reversed(lines) if _EXCEPTION.match(ln)), None)
        if hit:
            return hit.strip()
    for pattern in (_COMPILER, _RUST_TS, _ERROR_WORD, _EXCEPTION):
        hit = next((ln for ln in lines if pattern.match(ln) and not _TEST_LOG.match(ln)), None)
        if hit:
            return _with_detail(hit, lines)
    hit = next((ln for ln in lines if _LOOSE.search(ln)), None)
    if hit:
        return _with_detail(hit, lines)
    code = _EXIT.search(output[:300])
    if code:
        return f"exit code {code.group(1)}"
    return lines[0].strip() if lines else ""


def _with_detail(line: str, lines: list[str]) -> str:
    """A `--- FAIL: TestX` line with the test's own log line (after it, or before it under `go test -v`);
    a line ending in ":" with the next line."""
    text = line.strip()
    i = lines.index(line)
    after = lines[i + 1] if i + 1 < len(lines) else ""
    before = lines[i - 1] if i > 0 else ""
    if _GO_FAIL.match(line):
        log = after if _TEST_LOG.match(after) else before if _TEST_LOG.match(before) else ""
        return f"{text} {log.strip()}" if log else text
    if text.endswith(":") and after.strip():
        return f"{text} {after.strip()}"
    return text


def looks_like_error(text: str) -> str:
    """The informative error line of pasted text (a user's message), or "" when it holds none."""
    lines = _candidates(text.splitlines())
    for pattern in (_GO_FAIL, _PANIC, _COMPILER, _RUST_TS, _ERROR_WORD):
        hit = next((ln for ln in lines if pattern.match(ln) and not _TEST_LOG.match(ln)), None)
        if hit:
            return hit.strip()
    if any(ln.startswith("Traceback") for ln in lines):
        return next((ln.strip() for ln in reversed(lines) if _EXCEPTION.match(ln)), "")
    return ""


_PAGER_END = re.compile(r"\|\s*(?:head|tail|tee|less|more)\b[^|&;\n]*$")


def hidden_failure(command: str, output: str) -> str:
    """The error line the output of a command shows when its exit code cannot: the pipe ends in a pager
    (`mise run lint 2>&1 | head -30` exits with `head`'s 0). Only for a command that does work (a look-around
    such as `cat build.log | head` showing an old error is no failure); "" when none shows."""
    if not _PAGER_END.search(command.strip()) or not changes_things(command):
        return ""
    return looks_like_error(output)


def exit_code_failed(text: str) -> bool:
    """True when a tool's output starts by reporting a non-zero exit code."""
    return bool(_EXIT.search(text[:300]))


# -- commands ---------------------------------------------------------------------------------------------

_HEREDOC = re.compile(r"""-m\s+"?\$\(cat\s+<<-?\s*['"]?(\w+)['"]?\s*\n(.*?)\n\s*\1\s*\)"?""", re.DOTALL)
_SEGMENTS = re.compile(r"&&|\|\||;|\|(?!\|)|\n")
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def commit_messages(command: str) -> list[str]:
    """The commit messages of every `git commit` in a shell command (heredoc bodies included)."""
    if not re.search(r"\bgit\b(?:\s+-[Cc]\s+\S+)*\s+commit\b", command):
        return []
    found = [m.group(2).strip() for m in _HEREDOC.finditer(command)]
    if found:
        return [f for f in found if f]
    for match in re.finditer(r"\bgit\b(?:\s+-[Cc]\s+\S+)*\s+commit\b([^\n;&|]*(?:\n(?!\s*git\b)[^\n;&|]*)*)", command):
        try:
            words = shlex.split(match.group(1))
        except ValueError:
            continue
        parts: list[str] = []
        for i, word in enumerate(words):
            if word in ("-m", "--message") and i + 1 < len(words):
                parts.append(words[i + 1])
            elif re.fullmatch(r"-[a-zA-Z]*m", word) and i + 1 < len(words):
                parts.append(words[i + 1])
            elif word.startswith("--message="):
                parts.append(word.split("=", 1)[1])
        message = "\n\n".join(p.strip() for p in parts if p.strip())
        if message:
            found.append(message)
    return found


def command_key(command: str) -> str:
    """What a retry of a command shares with it: program and subcommand of the last step ("go test")."""
    steps = [s.strip() for s in _SEGMENTS.split(command) if s.strip()]
    steps = [s for s in steps if not re.match(r"^(?:cd|pushd|export|source|\.|set|echo|sleep)\b", s)] or steps
    step = steps[-1] if steps else ""
    for candidate in reversed(steps):  # the last step that does the work, not a trailing `tail`/`grep`
        if not re.match(r"^(?:tail|head|grep|rg|sort|uniq|wc|cat|less|tee|awk|sed|cut|jq|true|exit)\b", candidate):
            step = candidate
            break
    words = [w for w in step.split() if not _ASSIGN.match(w)]
    if len(words) > 2 and words[0] == "git" and words[1] in ("-C", "-c"):
        words = ["git", *words[3:]]  # `git -C <dir> status` is `git status`
    if words and words[0] in ("timeout", "time", "env", "sudo", "nice"):
        words = words[1:]
        words = words[1:] if words and re.fullmatch(r"[\d.]+[smh]?", words[0]) else words
    program = [w for w in words if not w.startswith("-")]
    return " ".join(program[:2])


_READ_ONLY = frozenset(
    "ls ll cat head tail less more find grep rg ag pwd echo printf tree which type whereis file stat wc du df "
    "cd env printenv sort uniq diff sleep true jq pgrep ps lsof md5 md5sum shasum sha256sum xxd od hexdump "
    "launchctl awk sed cut tr basename dirname realpath readlink date uname whoami id".split()
)
_GIT_READ = frozenset(
    "status diff log show branch rev-parse remote fetch blame ls-files ls-tree config fsck cat-file reflog "
    "count-objects for-each-ref show-ref describe grep shortlog".split()
)


_GH_READ = frozenset("view list diff status checks".split())


def _gh_reads(words: list[str]) -> bool:
    """`gh pr view`, `gh run list`, a plain `gh api` GET: the GitHub CLI only reading."""
    if len(words) > 1 and words[1] == "api":
        return not any(w in ("-f", "-F", "--field", "--raw-field", "-X", "--method", "--input") for w in words)
    return len(words) > 2 and words[2] in _GH_READ


def changes_things(command: str) -> bool:
    """False for a command that only looks around (ls, cat, git status …), which is no fix."""
    unquoted = re.sub(r"'[^']*'|\"(?:\\.|[^\"\\])*\"", "''", command)  # a `|` inside quotes splits nothing
    for segment in _SEGMENTS.split(unquoted):
        words = [w for w in segment.split() if not _ASSIGN.match(w)]
        if len(words) > 2 and words[0] == "git" and words[1] in ("-C", "-c"):
            words = ["git", *words[3:]]
        if not words:
            continue
        if re.search(r"(?<![0-9&])>{1,2}\s*(?!&|/dev/null)\S", segment):
            return True  # writes a file
        if (
            words[0] == "git"
            and len(words) > 1
            and (words[1] in _GIT_READ or words[1:3] in (["worktree", "list"], ["stash", "list"]))
        ):
            continue
        if words[0] == "gh" and _gh_reads(words):
            continue
        if words[0] not in _READ_ONLY:
            return True
    return False
