"""Long fuzzing run of the privacy invariants (``make fuzz``).

Runs :func:`tests.properties.test_invariants.test_invariants` and the
error-family property with many more examples than CI (random, not derandomized)
and prints what the generated queries did.

Usage:
    python benchmarks/fuzz.py --examples 2000
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=2000, help="examples per property")
    args = parser.parse_args()
    os.environ["PARADISE_FUZZ_EXAMPLES"] = str(args.examples)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from hypothesis import settings

    settings.register_profile("fuzz", deadline=None, derandomize=False)
    settings.load_profile("fuzz")
    from tests.properties import test_invariants as props

    start = time.perf_counter()
    props.test_invariants()
    middle = time.perf_counter()
    props.test_only_paradise_errors_for_any_text()
    end = time.perf_counter()
    total = sum(props.STATS.values())
    print(f"invariants: {args.examples} worlds, {total} queries in {middle - start:.1f} s")
    for outcome, count in sorted(props.STATS.items(), key=lambda kv: -kv[1]):
        print(f"  {outcome}: {count} ({count / max(total, 1):.0%})")
    print(f"error family: {args.examples} SQL-ish strings in {end - middle:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
