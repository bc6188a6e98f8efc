"""Whether the names a statement gives exist in the project's git tree today, and where they live.

    tree = GitTree(root)                       # the git work tree the memory root lies in (or none)
    tree.problem("settings.Load")              # None, or why it is not there
    tree.problem("State", place="cmd/entire/cli/session/state.go")

A name counts where it is real: code names (`LoadSettings`, `settings.Load`, `run()`) in code, outside
comments and string literals; keys and settings (`gc_auto`, `log-level`, `MEMORY_ROOT`, `a.b.c`) outside
comments (a key is a string in JSON and YAML); flags (`--dry-run`) as written, or as the bare string a flag
library declares ("dry-run"); paths as tracked files or folders. Words match whole (`Load` is not in
`LoadAll`). A dotted code name is the whole name used somewhere, or its last part defined in a file under a
folder (a package) named by its first part: two halves found apart do not make one name. The memory's own
files (topics, sessions, dreams, MEMORY.md) never count: they may name what was never built.
"""

from __future__ import annotations

import functools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

MEMORY_PARTS = ("topics", "sessions", "dreams", "MEMORY.md", ".memory")
SLASH_COMMENTS = frozenset(
    "go js mjs cjs ts tsx jsx java c h cc cpp hpp cs rs swift kt kts scala php dart proto css scss groovy".split()
)
HASH_COMMENTS = frozenset("py sh bash zsh fish rb pl yaml yml toml r mk nix ex exs cfg conf ini tf hcl".split())
DOCS = frozenset("md markdown txt rst adoc org".split())
HASH_NAMES = frozenset({"makefile", "dockerfile", "justfile", "gemfile", "rakefile"})
FLAG = re.compile(r"^--?[A-Za-z][\w-]*$")
PATHLIKE = re.compile(r"/|^[\w.-]+\.[A-Za-z0-9]{1,8}$")
CODE_NAME = re.compile(r"^[A-Za-z_][\w]*(?:\(\))?$|^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+(?:\(\))?$")


FILE_EXTENSIONS = frozenset(
    "go py js mjs cjs ts tsx jsx java c h cc cpp hpp cs rs rb php swift kt md txt rst json yaml yml toml ini cfg "
    "conf sh bash zsh fish lock mod sum sql html css scss xml proto gradle mk env csv tf hcl nix lua dart ex exs "
    "ipynb jsonl mmd svg png".split()
)


def names_a_file(name: str) -> bool:
    """A path or a file name with a known extension (`cmd/app`, `setup.go`, `go.sum`)."""
    return "/" in name or ("." in name and name.rsplit(".", 1)[-1].casefold() in FILE_EXTENSIONS)


def name_kind(name: str) -> str:
    """ "path", "flag", "code" (an identifier or a dotted code name) or "key" (anything else: settings,
    snake_case and kebab-case keys, environment variables, task names)."""
    if FLAG.match(name):
        return "flag"
    if names_a_file(name) or (PATHLIKE.search(name) and not CODE_NAME.match(name)):
        return "path"
    bare = name[:-2] if name.endswith("()") else name
    mixed = bool(re.search(r"[a-z]", bare) and re.search(r"[A-Z]", bare))
    return "code" if CODE_NAME.match(bare) and (mixed or name.endswith("()")) else "key"


def _family(path: str) -> str:
    name = path.rsplit("/", 1)[-1].casefold()
    ext = name.rsplit(".", 1)[-1] if "." in name else ""
    if ext in SLASH_COMMENTS:
        return "slash"
    if ext in HASH_COMMENTS or name in HASH_NAMES:
        return "hash"
    if ext in DOCS:
        return "docs"
    if ext == "json":
        return "json"
    return "other"


def code_part(line: str, family: str, *, strings: bool) -> str:
    """`line` with its comment blanked out, and its string literals too unless `strings`."""
    if family in ("docs", "other"):
        return line
    comment = {"slash": "//", "hash": "#"}.get(family, "")
    out: list[str] = []
    quote = ""
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote != "`":
                out.append("  " if not strings else line[i : i + 2])
                i += 2
                continue
            if ch == quote:
                quote = ""
            out.append(ch if strings else " ")
        elif ch in "\"'`" and family != "json" or ch == '"':
            quote = ch
            out.append(ch)
        elif comment and line.startswith(comment, i) or family == "slash" and line.startswith("/*", i):
            break
        else:
            out.append(ch)
        i += 1
    stripped = "".join(out)
    return "" if family == "slash" and stripped.lstrip().startswith("*") else stripped


class GitTree:
    """The git work tree a memory root lies in (if any), for checking that names exist and where."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.top = _toplevel(root)
        self.memory: tuple[str, ...] = ()
        if self.top is not None:
            try:
                base = root.resolve().relative_to(self.top.resolve()).as_posix()
            except ValueError:
                base = ""
            prefix = "" if base in ("", ".") else base + "/"
            self.memory = tuple(prefix + p for p in MEMORY_PARTS)

    @property
    def available(self) -> bool:
        return self.top is not None

    @functools.cached_property
    def paths(self) -> tuple[str, ...]:
        out = _git(self.top, "ls-files", "-z")
        found = (p for p in out.split("\0") if p) if out is not None else iter(())
        return tuple(p for p in found if not any(p == m or p.startswith(m + "/") for m in self.memory))

    def path_exists(self, name: str) -> bool:
        wanted = name.strip("/").removeprefix("./")
        return any(
            p == wanted or p.startswith(wanted + "/") or p.endswith("/" + wanted) or ("/" + wanted + "/") in p
            for p in self.paths
        )

    def under(self, place: str) -> list[str]:
        """The tracked files a place names: a file, a folder, or the end of a path (`session/state.go`)."""
        wanted = place.strip("/").removeprefix("./")
        return [
            p
            for p in self.paths
            if p == wanted or p.startswith(wanted + "/") or p.endswith("/" + wanted) or ("/" + wanted + "/") in p
        ]

    def lines_naming(self, text: str, limit: int = 3) -> list[tuple[str, int, str]]:
        """(path, line number, line) of the first tracked lines naming `text` as a whole word (memory files out)."""
        return [(path, number, line.strip()) for path, number, line in self._grep(text)[:limit]]

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one GitTree lives for one verification
    def _grep(self, text: str) -> tuple[tuple[str, int, str], ...]:
        """(path, line number, line) of every tracked line holding `text` as whole words (memory files left
        out)."""
        if self.top is None:
            return ()
        excluded = [f":(exclude){m}" for m in self.memory]
        args = ["git", "-C", str(self.top), "grep", "-n", "-I", "-w", "-F", "-e", text, "--", ".", *excluded]
        try:
            proc = subprocess.run(args, capture_output=True, timeout=60, check=False)
        except (OSError, subprocess.SubprocessError):
            return ()
        out = []
        for raw in proc.stdout.decode("utf-8", "replace").splitlines()[:5000]:
            path, _, rest = raw.partition(":")
            number, _, line = rest.partition(":")
            out.append((path, int(number) if number.isdigit() else 0, line))
        return tuple(out)

    def real(self, name: str, kind: str, within: list[str] | None = None) -> list[str]:
        """The files where `name` really occurs as a name of its kind (see the module's docstring)."""
        bare = name[:-2] if name.endswith("()") else name
        pattern = re.compile(rf"(?<![\w]){re.escape(bare)}(?![\w])")
        files: dict[str, None] = {}
        for path, _n, line in self._grep(bare):
            if within is not None and path not in within:
                continue
            family = _family(path)
            if kind == "code" and family in ("docs", "other", "json"):
                continue
            if kind in ("key", "flag") and family == "docs":
                continue
            if pattern.search(code_part(line, family, strings=kind != "code")):
                files.setdefault(path, None)
        return list(files)

    def known(self, word: str) -> bool:
        """Whether a bare CamelCase word is one the project knows at all (in any tracked file, in any case, code
        or prose) or a well-known product's name (GitHub, PyPI): a word, not a claim about the code."""
        if word.casefold() in PRODUCT_NAMES:
            return True
        return bool(self._grep_any(word))

    @functools.lru_cache(maxsize=256)  # noqa: B019 - one GitTree lives for one verification
    def _grep_any(self, word: str) -> bool:
        if self.top is None:
            return False
        excluded = [f":(exclude){m}" for m in self.memory]
        args = ["git", "-C", str(self.top), "grep", "-q", "-I", "-i", "-w", "-F", "-e", word, "--", ".", *excluded]
        try:
            return subprocess.run(args, capture_output=True, timeout=60, check=False).returncode == 0
        except (OSError, subprocess.SubprocessError):
            return False

    def defined(self, name: str, files: list[str]) -> bool:
        """Whether `name` is defined (not only used) in one of `files`: a function, type, class, method, constant,
        variable, struct field or key of its own."""
        bare = name[:-2] if name.endswith("()") else name
        pattern = re.compile(DEFINITION.format(name=re.escape(bare)))
        return any(
            path in files and pattern.search(code_part(line, _family(path), strings=False))
            for path, _n, line in self._grep(bare)
        )

    def problem(self, name: str, place: str | None = None) -> str | None:
        """None when `name` is in the tree (in `place` when given), else what is wrong; None outside git."""
        if self.top is None:
            return None
        kind = name_kind(name)
        if place is not None:
            files = self.under(place)
            if not files:
                return f"`{place}` is not a file or folder of the project ({self.top})"
            bare = name[:-2] if name.endswith("()") else name
            if kind == "code":  # `retry.Policy` in `internal/retry`: Policy defined there, in a package retry
                here = self._dotted(bare, files) if "." in bare else self.defined(bare, files)
            else:
                here = self._found(name, kind, files)
            if kind != "path" and not here:
                return f"`{name}` is not defined in `{place}` (a use, a comment or a string does not count)"
            return None
        if kind == "path":
            if self.path_exists(name) or self.real(name.strip("/"), "key", None):
                return None  # a file or folder, or a path the code names (a module path in go.mod)
            return f"`{name}` is not a file or folder of the project"
        if self._found(name, kind, None):
            return None
        return (
            f"`{name}` does not occur in the project as a {_KIND_WORDS[kind]} today (comments"
            + (" and strings" if kind == "code" else "")
            + " do not count)"
        )

    def _found(self, name: str, kind: str, within: list[str] | None) -> bool:
        if self.real(name, kind, within):
            return True
        if kind == "flag":
            return bool(self.real(name.lstrip("-"), "key", within))
        bare = name[:-2] if name.endswith("()") else name
        if kind == "code" and "." in bare:
            return self._dotted(bare, within)
        return False

    def _dotted(self, bare: str, within: list[str] | None) -> bool:
        """`pkg.Name`: Name defined in a file of a folder named pkg (or a file pkg.*); `Type.member`: a method of
        Type (Go's `func (t *Type) member`), or both defined in one file."""
        head, _, tail = bare.rpartition(".")
        owner = head.rsplit(".", 1)[-1]
        files = self.real(tail, "code", within)
        if owner[:1].isupper():
            receiver = re.compile(rf"func\s*\(\s*\w*\s*\*?{re.escape(owner)}(?:\[[^\]]*\])?\s*\)\s*{re.escape(tail)}\b")
            if any(receiver.search(line) for _p, _n, line in self._grep(tail)):
                return True
            return any(self.defined(owner, [f]) and self.defined(tail, [f]) for f in files)
        return any(Path(f).parent.name == owner or Path(f).stem == owner for f in files if self.defined(tail, [f]))


# A definition of NAME on a line: a function, method, type, class, constant or variable, a struct field or a
# key of its own ("NAME:" / "NAME =" / "NAME :=" at the start), or Go's `func (r *T) NAME(`.
DEFINITION = (
    r"\b(?:func|def|class|type|interface|struct|enum|const|var|let|fn|trait|module|namespace)\s+"
    r"(?:\([^)]*\)\s*)?\*?{name}\b|^\s*(?:export\s+)?(?:public |private |protected |static |final )*"
    r"(?:[\w.<>\[\]*]+\s+)?{name}\s*(?::=|=(?!=)|:|\(|\s+[\w.*\[\]]+(?:\s|$|`))|^\s*\[{name}\]"
)


# Products and services written in CamelCase, named in prose without being the project's code.
PRODUCT_NAMES = frozenset(
    "github gitlab bitbucket pypi npmjs javascript typescript postgresql mysql sqlite mongodb dynamodb mariadb "
    "clickhouse rabbitmq zeromq elasticsearch opensearch graphql websocket websockets oauth openai youtube linkedin "
    "macos ios ipados iphone ipad powershell vscode intellij pycharm webstorm circleci travisci githubactions "
    "dockerhub cloudflare cloudfront fastapi numpy scipy pytorch tensorflow langchain llamaindex huggingface "
    "wordpress digitalocean sourcehut chromadb duckdb leveldb rocksdb boltdb badgerdb cockroachdb timescaledb "
    "influxdb couchdb firebase firestore bigquery redshift snowflake databricks jetbrains stackoverflow "
    "webfetch websearch todowrite sessionstart sessionend posttooluse pretooluse userpromptsubmit subagentstop "
    "precompact claudecode openapi swiftui nextjs nodejs reactjs vuejs sveltekit nestjs expressjs".split()
)

_KIND_WORDS = {"code": "name in code", "key": "key or setting", "flag": "flag", "path": "path"}


def _git(cwd: Path | None, *args: str) -> str | None:
    if cwd is None:
        return None
    try:
        proc = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _toplevel(root: Path) -> Path | None:
    out = _git(root, "rev-parse", "--show-toplevel")
    return Path(out.strip()) if out and out.strip() else None


BACKTICKED_SPAN = re.compile(r"`([^`\n]+)`")
PLACE_BEFORE = re.compile(r"\b(?:in|inside|under|at|within|to|into|of|defined in|lives in|lives under)\W*$", re.I)
EXTERNAL = re.compile(
    r"\b(?:git|gh|npm|npx|pip3?|go|brew|docker|kubectl|cargo|make|uv|yarn|pnpm|curl|ssh|python3?|node|apt|"
    r"claude)\b(?:\s+[\w:.-]+){0,3}\s*$",
    re.I,
)
LOOSE_FLAG = re.compile(r"(?<![\w`-])--[a-z][\w-]+")


def _external(before: str) -> bool:
    """Whether a name follows another program's name ("git config gc.auto", "go test -race")."""
    return bool(EXTERNAL.search(before[-60:]))


UNQUOTED_NAME = re.compile(
    r"(?<![\w`/.-])(?:"
    r"[A-Z][A-Za-z0-9]*\.[A-Za-z_]\w*"  # Type.member
    r"|[a-z]\w*\.[A-Z]\w*"  # package.Exported
    r"|[A-Za-z_][\w-]*(?:/[\w.-]+)+/?"  # paths: cmd/entire/cli, docs/generated/
    r"|[a-z]+(?:[A-Z][a-z0-9]+)+\w*"  # camelCase
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\w*"  # CamelCase
    r")(?![\w`/-])"
)
PATH_PLACE = re.compile(
    r"\b(?:in|inside|under|within|into|to|of|defined in|lives in|lives under)\s+`?"
    r"([\w./-]+/[\w./-]*|[\w-]+\.[a-z]{1,5})`?"
)
PACKAGE_PLACE = re.compile(r"\bin (?:the )?`?([a-z][\w/-]*)`? (?:package|folder|directory|module)\b")


LOCATED_IN = re.compile(r"\b(?:in|inside|under|within|into)\s+(?:the\s+)?$")


def _file_like(path: str, before: str) -> bool:
    """An unquoted slashed word is a file or folder when it looks like one: a file's extension, a trailing
    slash, or "in"/"under" before it."""
    last = path.rstrip("/").rsplit("/", 1)[-1]
    return path.endswith("/") or bool(re.search(r"\.[A-Za-z]{1,5}$", last)) or bool(LOCATED_IN.search(before))


def _places(statement: str) -> list[tuple[int, str]]:
    """Where a statement puts things: (position, place) for "in `path`", "in path/x.go", "in the X package"."""
    out = [(m.start(), m.group(1)) for m in PACKAGE_PLACE.finditer(statement)]
    for m in PATH_PLACE.finditer(statement):
        if name_kind(m.group(1)) == "path":
            out.append((m.start(), m.group(1)))
    return sorted(out)


@dataclass(frozen=True)
class ClaimedName:
    """A name a statement gives: where it puts it (or None), and whether it was written bare (not backticked)."""

    name: str
    place: str | None
    bare: bool


def claimed_names(statement: str) -> list[ClaimedName]:
    """The project's names a statement gives, each with the file or folder it places it in (or None):
    backticked names without spaces, paths, camelCase and CamelCase names and flags anywhere; another
    program's names (after `git`, `go`, `npm` ...) are left out. A name is placed by the first place after it
    in the same clause ("`Load` in `settings/load.go`", "X in the session package")."""
    found: list[tuple[int, str, bool]] = []
    spans = [(m.start(), m.end(), m.group(1).strip()) for m in BACKTICKED_SPAN.finditer(statement)]
    for start, _end, span in spans:
        if " " in span or len(span) < 2 or span[0] in "$<" or "://" in span or "=" in span:
            continue
        if not _external(statement[:start]):
            found.append((start, span.rstrip(".,:;"), False))
    plain = BACKTICKED_SPAN.sub(lambda m: " " * len(m.group(0)), statement)
    for m in (*LOOSE_FLAG.finditer(plain), *UNQUOTED_NAME.finditer(plain)):
        name = m.group(0).rstrip(".,:;")
        if "://" in plain[max(0, m.start() - 8) : m.end()] or _external(plain[: m.start()]):
            continue
        if name_kind(name) == "path" and not _file_like(name, plain[: m.start()]):
            continue  # a branch or a module path ("the branch is entire/checkpoints/v1"): grounded, not looked up
        found.append((m.start(), name, not name.startswith("-")))
    places = _places(statement)
    out: dict[str, ClaimedName] = {}
    for at, name, bare in sorted(found):
        place = next((p for pos, p in places if pos > at and pos - at < 60 and p != name), None)
        out.setdefault(name, ClaimedName(name, place if name_kind(name) != "path" else None, bare))
    return list(out.values())
