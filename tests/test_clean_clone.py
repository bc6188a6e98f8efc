"""A stranger's fresh clone: the README's test command is what CI runs, and it passes without `../shared`.

Tests that read data from outside the repository (real transcripts, LoCoMo) must skip, with a one-line reason,
when it is absent. Here every test that mentions that data (directly, or through a module-level name, helper
or fixture built from it) is run with the data pointed at a folder that does not exist: each must skip or
pass, none may fail or error.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO, SHARED

# Where the benchmarks read their data (bench/benchlib.data_dir) when nothing moves it.
BENCH_DATA = Path(os.environ.get("MEMORY_BENCH_DATA") or SHARED / "bench")

CHECKS = (
    " && .venv/bin/mypy && .venv/bin/mypy --config-file tests/mypy.ini"
    " && .venv/bin/ruff check memory_server tests bench && .venv/bin/ruff format --check memory_server tests bench"
)
SHARED_SEEDS = {"SHARED", "SHARED_TRANSCRIPTS", "require_shared"}


def readme_test_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Set-up: two commands\n") :]
    after = section[section.index("Install and pass the tests") :]
    (command,) = re.findall(r"^```bash\n(.*?)\n^```", after, flags=re.M | re.S)[:1]
    return command


def test_ci_runs_the_readme_test_command_then_mypy_ruff_and_the_format_check() -> None:
    command = readme_test_command()
    assert "\n" not in command and command.endswith("&& .venv/bin/pytest"), command
    assert "@anthropic-ai/claude-code@2.1.197" in command and "@anthropic-ai/claude-code@2.1.332" in command
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    commands = [line for line in script.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands[-1] == command + CHECKS, "the last line of .ci/run is the README's test command, then the checks"
    assert os.access(REPO / ".ci" / "run", os.X_OK)


def test_the_readme_test_command_runs_the_whole_suite_and_says_how_long() -> None:
    """`.venv/bin/pytest` with nothing deselected (no -k, -m, --deselect or --ignore, here or in pyproject's
    addopts), and the README says how long it takes."""
    import tomllib

    command = readme_test_command()
    assert command.endswith("&& .venv/bin/pytest"), command
    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    addopts = options.get("addopts", "").split()
    assert not {"-k", "-m", "--deselect", "--ignore", "--ignore-glob", "-x"} & set(addopts), addopts
    assert options.get("testpaths") == ["tests"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    before = readme[readme.index("Install and pass the tests") : readme.index(command)]
    assert re.search(r"takes\s+(about\s+)?\d+(-\d+)?\s+minutes", before), before


def test_the_test_extra_installs_the_checkers() -> None:
    """`pip install -e '.[test]'` in a fresh clone gives .ci/run its mypy and ruff."""
    import tomllib

    extra = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~ ]", req, maxsplit=1)[0] for req in extra["test"]}
    assert {"pytest", "mypy", "ruff"} <= names, names


# -- tests that need ../shared ----------------------------------------------------------------------------


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)
    }


def _mentions_shared_folder(node: ast.AST) -> bool:
    """A literal path to the data beside the repository, e.g. `parents[2] / "shared"`."""
    return any(isinstance(n, ast.Constant) and n.value == "shared" for n in ast.walk(node))


def shared_tests(path: Path) -> list[str]:
    """Node ids of the tests in `path` that depend on the shared data, found by following names to a fixpoint:
    a module-level name, helper or fixture is shared when it mentions a shared name; a test is when it, its
    decorators (parametrize lists) or its fixtures do."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    tainted = set(SHARED_SEEDS)
    for node in tree.body:  # `from conftest import SHARED_TRANSCRIPTS as TRANSCRIPTS`
        if isinstance(node, ast.ImportFrom) and node.module == "conftest":
            tainted |= {alias.asname for alias in node.names if alias.name in SHARED_SEEDS and alias.asname}
    definitions = _module_definitions(tree)
    changed = True
    while changed:
        grown = {name for name, node in definitions.items() if name not in tainted and _uses(name, node, tainted)}
        tainted |= grown
        changed = bool(grown)
    rel = path.relative_to(REPO).as_posix()
    return sorted(f"{rel}::{name}" for name in tainted if name.startswith("test_") and name in definitions)


def _module_definitions(tree: ast.Module) -> dict[str, ast.AST]:
    """Each module-level name (function, class, assigned name) and the statement that defines it."""
    definitions: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definitions[node.name] = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for name in _names_in(target):
                    definitions[name] = node
    return definitions


def _uses(name: str, node: ast.AST, tainted: set[str]) -> bool:
    """Whether the definition of `name` mentions a shared name (its fixtures included) or the shared folder."""
    params = {a.arg for a in node.args.args} if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else set()
    return bool((_names_in(node) - {name}) & tainted or params & tainted or _mentions_shared_folder(node))


def test_shared_tests_are_found() -> None:
    """The finder itself: it sees tests that use the data directly, through a module-level list, or a helper."""
    found = shared_tests(REPO / "tests" / "test_cli.py")
    assert "tests/test_cli.py::test_compress_command_and_the_session_end_hook" in found
    assert "tests/test_cli.py::test_init_never_overwrites" not in found


def test_tests_that_need_shared_data_skip_without_it(tmp_path: Path) -> None:
    here = Path(__file__).resolve()
    ids = [node for path in sorted((REPO / "tests").glob("test_*.py")) if path != here for node in shared_tests(path)]
    assert len(ids) >= 10, ids
    moved = {tmp_path / "no-shared-here": SHARED, tmp_path / "no-bench-data-here": BENCH_DATA}
    env = {
        **os.environ,
        "MEMORY_SERVER_SHARED": str(tmp_path / "no-shared-here"),
        "MEMORY_BENCH_DATA": str(tmp_path / "no-bench-data-here"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "-x", "-n", "0", *ids],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "failed" not in summary and "error" not in summary, summary
    reasons = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert reasons, done.stdout[-2000:]
    for line in reasons:
        assert "needs " in line or "absent" in line, line
        _names_real_data(line, moved)


def _names_real_data(reason: str, moved: dict[Path, Path]) -> None:
    """A skip reason names the path the test needs: one under the folder the data was moved to, and (where the
    real data is here) one that exists there, not a placeholder."""
    found = re.search(r"needs (\S+): |: (\S+) is absent", reason)
    assert found, reason
    named = Path(found.group(1) or found.group(2))
    (gone, real) = next(((g, r) for g, r in moved.items() if named.is_relative_to(g)), (None, None))
    assert gone is not None and real is not None, f"the reason names no data path: {reason}"
    if real.is_dir():
        assert (real / named.relative_to(gone)).exists(), f"the reason names a path the data does not have: {reason}"
