"""The package as it installs without a clone: `python -m build` makes a source archive and a wheel from the
files a checkout holds, and the wheel installs into a fresh virtual environment and runs there, the Claude Code
plugin's files included (what `pip install git+URL` and `pipx install` give a person)."""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
from conftest import REPO, write

RUN_TIMEOUT = 300


def run(args: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT, **kwargs)  # type: ignore[call-overload]
    assert done.returncode == 0, f"{' '.join(args)}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def checkout(into: Path) -> Path:
    """The files a fresh clone holds: tracked ones, and new ones not ignored (what a commit would add)."""
    listed = run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO).stdout
    for rel in filter(None, listed.split("\0")):
        src = REPO / rel
        if src.is_file() and not rel.startswith(".ci-node"):
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            (into / rel).write_bytes(src.read_bytes())
            (into / rel).chmod(src.stat().st_mode)
    return into


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with the wheel built from a checkout installed in it (its dependencies come
    from this test run's environment, after the venv's own site-packages: nothing is fetched)."""
    work = tmp_path_factory.mktemp("packaging")
    source = checkout(work / "checkout")
    dist = work / "dist"
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(source)])
    assert sorted(p.suffix for p in dist.iterdir()) == [".gz", ".whl"]
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    python = venv / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "test-dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    (wheel,) = dist.glob("*.whl")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)])
    return venv


def test_every_subpackage_is_packaged() -> None:
    declared = set(
        tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    )
    found = {".".join(p.parent.relative_to(REPO).parts) for p in (REPO / "memory_server").rglob("__init__.py")}
    assert found | {"memory_server.claude_plugin"} == declared


def test_the_wheel_installs_and_runs(installed: Path, tmp_path: Path) -> None:
    program = installed / "bin" / "memory-server"
    assert run([str(program), "--version"]).stdout.startswith("memory-server ")
    # Run from elsewhere than the clone: `python -c` imports from the current folder first.
    where = run(
        [str(installed / "bin" / "python"), "-c", "import memory_server; print(memory_server.__file__)"], cwd=tmp_path
    )
    assert where.stdout.startswith(str(installed)), "the installed copy runs, not the clone's"

    root = tmp_path / "memory"
    run([str(program), "init", "--root", str(root)])
    write(root, "topics/printer.md", "# Printer\n\nError E-4242 means the belt tension is out of range.\n")
    run([str(program), "index", "--keyword-only", "--root", str(root)])
    found = run([str(program), "search", "--exact", "E-4242", "--json", "--root", str(root)])
    assert json.loads(found.stdout)["hits"][0]["path"] == "topics/printer.md"
    # The dream prompt's text is a file of the package (memory_server/prompts/dream.md): the wheel carries it.
    probe = "from pathlib import Path\nfrom memory_server.prompts.dream import dream_prompt\n"
    probe += "print(dream_prompt(Path('.'), 5).splitlines()[0])"
    rendered = run([str(installed / "bin" / "python"), "-c", probe], cwd=tmp_path)
    assert rendered.stdout.startswith("# Dream: promote what recent sessions established"), rendered.stdout


def test_the_wheel_carries_the_plugin_and_its_hooks(installed: Path, tmp_path: Path) -> None:
    python = installed / "bin" / "python"
    probe = (
        "from memory_server.claude_code.plugin_files import plugin_source, declared_hooks\n"
        "p = plugin_source(); print(p); print(len(declared_hooks(p)))\n"
    )
    folder, count = run([str(python), "-c", probe], cwd=tmp_path).stdout.split()
    assert folder.startswith(str(installed)) and folder.endswith("claude_plugin") and count == "5"
    assert (Path(folder) / "skills" / "dream" / "SKILL.md").is_file() and (
        Path(folder) / "bin" / "memory-server"
    ).is_file()

    project = tmp_path / "project"
    project.mkdir()
    home = tmp_path / "home"
    run(
        [str(installed / "bin" / "memory-server"), "hooks", "install", "--scope", "project"],
        cwd=project,
        env={"HOME": str(home)},
    )
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (hook,) = settings["hooks"]["SessionEnd"][0]["hooks"]
    assert hook["command"] == str(installed / "bin" / "memory-server") and hook["args"] == ["hook", "session-end"]
