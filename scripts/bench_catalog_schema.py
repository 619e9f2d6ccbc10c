"""Benchmark: what checking a catalog file against its shape costs on top of parsing it.

Prints a table: file, size, parse (tomllib) and check (console.catalog.schema.validate) mean time per
call in milliseconds, over N calls each. The loaders check a file once per load (cached after).
"""

from __future__ import annotations

import statistics
import sys
import time
import tomllib
from collections.abc import Callable

from console.catalog import CATALOG_DIR
from console.catalog.schema import SHAPES, validate


def _mean_ms(fn: Callable[[], object], n: int) -> float:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.mean(samples)


def main(n: int = 50) -> None:
    print(f"{'file':<20} {'bytes':>7} {'parse ms':>9} {'check ms':>9}")
    for name, shape in sorted(SHAPES.items()):
        text = (CATALOG_DIR / name).read_text(encoding="utf-8")
        data = tomllib.loads(text)
        validate(data, shape, name)  # the first call reads each shape's fields once
        parse = _mean_ms(lambda text=text: tomllib.loads(text), n)
        check = _mean_ms(lambda data=data, shape=shape, name=name: validate(data, shape, name), n)
        print(f"{name:<20} {len(text.encode()):>7} {parse:>9.2f} {check:>9.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
