from ferry.manifest import load


def check_manifest(folder):
    """Validate the folder's manifest against the schema; raise before any upload."""
    manifest = load(folder)
    if "files" not in manifest:
        raise ValueError("manifest has no files")
    return manifest
