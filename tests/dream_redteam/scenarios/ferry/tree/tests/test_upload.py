from ferry.upload import upload_all


def test_dry_run_lists_keys():
    manifest = {"files": [{"key": "a"}, {"key": "b"}]}
    assert list(upload_all(manifest, workers=2, chunk_mb=64, depth=512, dry_run=True)) == ["a", "b"]
