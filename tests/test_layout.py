"""The package's shape: data flows one way through its steps, with no import cycles and no shadowed stdlib names.

The steps, in the order data flows through them (a module may import only from its own step or an earlier one):

    errors -> files -> parse -> settings -> sessions -> index -> search -> dream -> the top (api, server, cli, ...)

`sessions` comes before `index` because compressed sessions and transcripts are files the indexer reads.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "memory_server"
STEPS = ["errors", "files", "parse", "settings", "sessions", "index", "search", "dream", "top"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def step_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in STEPS:
        return parts[1]
    return "top"


def runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node but those under `if TYPE_CHECKING:` (imports for annotations only never run)."""
    out: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        out.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return out


def imports_of(path: Path) -> set[str]:
    """Every memory_server module a file imports when it runs, at module level or inside a function."""
    found: set[str] = set()
    for node in runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("memory_server"):
            found.add(node.module)
            for alias in node.names:  # `from memory_server.dream import run` imports a module
                candidate = f"{node.module}.{alias.name}"
                if (PACKAGE.parent / Path(*candidate.split("."))).with_suffix(".py").exists():
                    found.add(candidate)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("memory_server"))
    return found


def graph() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p) for p in PACKAGE.rglob("*.py")}


def test_a_module_imports_only_from_its_own_step_or_earlier_ones() -> None:
    backwards = [
        f"{module} ({step_of(module)}) imports {target} ({step_of(target)})"
        for module, targets in graph().items()
        for target in targets
        if STEPS.index(step_of(target)) > STEPS.index(step_of(module))
    ]
    assert backwards == []


def test_no_import_cycles() -> None:
    edges = graph()
    known = set(edges)
    # A package's __init__ is imported whenever one of its modules is; only real module edges count here.
    edges = {m: {t for t in ts if t in known and t != m and not m.startswith(t + ".")} for m, ts in edges.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target in sorted(edges.get(module, ())):
            if state.get(target) == 1:
                cycles.append(stack[stack.index(target) :] + [target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    assert cycles == []


def test_no_module_shadows_the_standard_library() -> None:
    # A file named like a stdlib module breaks `python` started inside its folder (keyword.py broke `import ast`).
    shadowing = [str(p) for p in PACKAGE.rglob("*.py") if p.stem in sys.stdlib_module_names]
    assert shadowing == []


def test_the_steps_are_folders_and_the_top_is_small() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert {"files", "parse", "sessions", "index", "search", "dream"} <= folders
    top_modules = sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem not in {"__init__", "__main__"})
    assert len(top_modules) <= 12, top_modules


def test_one_entry_point() -> None:
    # The `memory-server` script and `python -m memory_server` are the only ways in: no module but
    # __main__ runs code as a script.
    scripts = [
        str(p)
        for p in PACKAGE.rglob("*.py")
        if p.name != "__main__.py" and 'if __name__ == "__main__"' in p.read_text(encoding="utf-8")
    ]
    assert scripts == []


def _parsed_modules() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(PACKAGE.rglob("*.py"))]


def _is_exception_class(node: ast.ClassDef, known: set[str]) -> bool:
    bases = {ast.unparse(b).split(".")[-1] for b in node.bases}
    return bool(bases & known) or any(b.endswith(("Error", "Exception")) for b in bases)


def test_every_exception_class_is_in_errors_py_and_in_its_tree() -> None:
    """errors.py defines every exception class of the package, and its docstring draws each in the tree."""
    errors = PACKAGE / "errors.py"
    tree = ast.parse(errors.read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    drawn = ast.get_docstring(tree) or ""
    assert {"MemoryServerError", "CorruptIndexError", "IndexCancelled", "FileSkipped", "UnsafeYamlError"} <= defined
    assert [name for name in sorted(defined) if f" {name} " not in drawn.replace("\n", " \n")] == []
    elsewhere = [
        f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}"
        for path, module in _parsed_modules()
        if path != errors
        for node in ast.walk(module)
        if isinstance(node, ast.ClassDef) and _is_exception_class(node, defined | {"Exception", "BaseException"})
    ]
    assert elsewhere == [], "exception classes belong in memory_server/errors.py"


def test_no_handler_swallows_every_exception_silently() -> None:
    """`except Exception` (or BaseException, or a bare except) must re-raise, log or answer: never only `pass`."""
    silent = []
    for path, module in _parsed_modules():
        for node in ast.walk(module):
            if not isinstance(node, ast.ExceptHandler):
                continue
            broad = node.type is None or ast.unparse(node.type) in ("Exception", "BaseException")
            if broad and all(isinstance(stmt, (ast.Pass, ast.Continue)) for stmt in node.body):
                silent.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert silent == []
