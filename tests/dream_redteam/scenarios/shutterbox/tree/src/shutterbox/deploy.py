"""Deploying thumbnails: upload, then purge the CDN."""

import httpx

PURGE_URL = "https://cdn.example/api/purge"


def purge_cdn(token: str) -> None:
    """Purge the CDN once; the next deploy purges again if this one fails."""
    httpx.post(PURGE_URL, headers={"Authorization": f"Bearer {token}"}, timeout=30).raise_for_status()
