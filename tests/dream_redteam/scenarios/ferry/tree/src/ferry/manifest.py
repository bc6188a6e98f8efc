import json
from pathlib import Path

MANIFEST_VERSION = 2


def load(folder):
    """Read a v1 or v2 manifest (v2 readers accept v1; v1 clients never see v2)."""
    data = json.loads((Path(folder) / ".ferry-manifest.json").read_text())
    if data.get("version", 1) not in (1, 2):
        raise ValueError("unknown manifest version")
    return data
