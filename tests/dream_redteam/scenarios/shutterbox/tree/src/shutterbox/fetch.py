"""Fetching originals from the origin."""

import logging

import httpx

from shutterbox.config import ORIGIN_TIMEOUT, RETRY_DELAY

log = logging.getLogger(__name__)

client = httpx.Client(timeout=ORIGIN_TIMEOUT, limits=httpx.Limits(max_keepalive_connections=4))


def retry_after(attempt: int) -> int:
    """Seconds to wait before fetching a failed original again."""
    return RETRY_DELAY


def fetch(url: str) -> bytes:
    log.debug("fetch %s", url)
    response = client.get(url)
    response.raise_for_status()
    return response.content
