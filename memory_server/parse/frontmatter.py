"""The one front-matter reader, and the one way the program loads YAML (front matter and memory.yaml).

Front matter and memory.yaml come from files anyone with commit rights can change, so YAML is loaded
with a loader that refuses anchors and aliases (`&a` / `*a`: a few hundred bytes of nested aliases expand
to gigabytes), refuses text over a size cap, and gives back only plain values: maps, lists, strings,
numbers, booleans, null and dates. Anything else is an UnsafeYamlError. `load_yaml` is the one place
PyYAML's own errors become ours: YAML that does not parse is a YamlError (UnsafeYamlError is one too), so a
caller that handles bad YAML handles refused YAML the same way.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import yaml

from memory_server.errors import UnsafeYamlError, YamlError

# Front matter is a few lines of metadata; memory.yaml a few dozen. Larger is refused, not parsed.
MAX_FRONT_MATTER_CHARS = 64 * 1024
MAX_YAML_CHARS = 256 * 1024
MAX_DEPTH = 32
PLAIN_SCALARS = (str, int, float, bool, dt.date, type(None))  # dt.datetime is a dt.date


class _PlainLoader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader that stops at the first anchor or alias instead of building (and sharing) the node."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise UnsafeYamlError(
                f"YAML anchors and aliases (&name, *name) are not allowed (line {event.start_mark.line + 1}); "
                "write the values out"
            )
        return super().compose_node(parent, index)


def load_yaml(text: str, *, max_chars: int = MAX_YAML_CHARS) -> Any:
    """Load YAML text safely (see the module docstring); raise YamlError (UnsafeYamlError when refused)."""
    if len(text) > max_chars:
        raise UnsafeYamlError(f"YAML of {len(text)} characters is over the {max_chars}-character limit")
    try:
        value = yaml.load(text, Loader=_PlainLoader)  # noqa: S506 - _PlainLoader is a SafeLoader
    except RecursionError as exc:
        raise UnsafeYamlError("YAML nested too deeply") from exc
    except yaml.YAMLError as exc:
        raise YamlError(str(exc)) from exc
    _check_plain(value, 0)
    return value


def _check_plain(value: Any, depth: int) -> None:
    if depth > MAX_DEPTH:
        raise UnsafeYamlError(f"YAML nested more than {MAX_DEPTH} levels deep")
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, PLAIN_SCALARS):
                raise UnsafeYamlError(f"a YAML key of type {type(key).__name__} is not allowed")
            _check_plain(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check_plain(item, depth + 1)
    elif not isinstance(value, PLAIN_SCALARS):
        raise UnsafeYamlError(f"a YAML value of type {type(value).__name__} is not allowed (only plain values)")


def split_front_matter(lines: list[str]) -> tuple[dict[str, Any], int, list[str]]:
    """Return (metadata, number of lines the front matter takes, warnings) for a file's lines.

    Front matter opens with a `---` first line and closes with `---` or `...`. Malformed, refused or
    oversized YAML gives empty metadata and a warning; the body after it is still indexed.
    """
    if not lines or lines[0].strip() != "---":
        return {}, 0, []
    size = 0
    for i in range(1, len(lines)):
        if lines[i].strip() in ("---", "..."):
            if size > MAX_FRONT_MATTER_CHARS:
                return (
                    {},
                    i + 1,
                    [f"front matter is over the {MAX_FRONT_MATTER_CHARS}-character limit; indexed without it"],
                )
            block = "\n".join(lines[1:i])
            try:
                meta = load_yaml(block, max_chars=MAX_FRONT_MATTER_CHARS) if block.strip() else {}
            except UnsafeYamlError as exc:
                return {}, i + 1, [f"front matter refused: {exc}; indexed without it"]
            except YamlError as exc:
                first = str(exc).splitlines()[0] if str(exc) else "parse error"
                return {}, i + 1, [f"front matter is not valid YAML ({first}); indexed without it"]
            if meta is None:
                meta = {}
            if not isinstance(meta, dict):
                return {}, i + 1, ["front matter is not a mapping; indexed without it"]
            return meta, i + 1, []
        size += len(lines[i]) + 1
    return {}, 0, ["front matter is not closed with '---'; treated as text"]


def read_front_matter(path: Path, *, max_chars: int = MAX_FRONT_MATTER_CHARS) -> dict[str, Any]:
    """The front matter of a Markdown file on disk as a dict ({} when it has none, or it is refused or does
    not parse); reads only the head of the file."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            head = fh.read(max_chars + 8)
    except OSError:
        return {}
    if not head.startswith("---\n"):
        return {}
    end = head.find("\n---", 3)
    if end < 0:
        return {}
    try:
        meta = load_yaml(head[4:end], max_chars=max_chars)
    except YamlError:
        return {}
    return meta if isinstance(meta, dict) else {}
