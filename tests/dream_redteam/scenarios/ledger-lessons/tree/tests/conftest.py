import sys
from pathlib import Path

from ledgerly.parse import parse_amount  # noqa: F401

sys.path.insert(0, str(Path(__file__).parent))
