"""`python -m benchmarks [name ...]` runs every benchmark (or the named ones) and prints figures."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(m.name for m in pkgutil.iter_modules([str(here)]) if m.name.endswith("_bench"))
    chosen = [n for n in names if not argv or any(a in n for a in argv)]
    for name in chosen:
        print(f"\n== {name} ==", flush=True)
        importlib.import_module(f"benchmarks.{name}").main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
