"""`memory-server serve` with FakeEmbedder instead of the real model: for benchmarks of roots whose vectors
were made with FakeEmbedder (bench/scale.py --fake, bench/coldstart.py --fake).

The real server would see vectors from another model and re-embed every chunk; this one runs the same
server code (memory_server.server.serve) on the same root, with the fake's vectors. Plumbing and timing
only: its semantic results mean nothing.

    python bench/fake_server.py --root DIR
"""

from __future__ import annotations

import argparse
import logging
import sys

from memory_server.api import Memory
from memory_server.process_memory import limit_arenas
from memory_server.server import serve
from memory_server.testing import FakeEmbedder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="bench/fake_server.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", required=True, help="the memory root")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="memory-server: %(levelname)s %(name)s: %(message)s"
    )
    limit_arenas()  # as `memory-server serve` does, before the memory opens
    serve(Memory.open_lenient(args.root, embedder=FakeEmbedder()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
