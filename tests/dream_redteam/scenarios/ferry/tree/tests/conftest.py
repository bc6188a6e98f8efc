import pytest

from ferry.client import Client


@pytest.fixture
def client():
    return Client("test-bucket")
