#!/usr/bin/python3
"""Measure headroom's CPU ground truth: saved-for-backward bytes, live-byte peaks per phase, optimizer state.

    /usr/bin/python3 validation/torch/measure.py --out validation/torch/measurements.csv   # the whole grid
    /usr/bin/python3 validation/torch/measure.py --check validation/torch/measurements.csv --ci
    /usr/bin/python3 validation/torch/measure.py --self-test

Needs Debian's python3-torch (1.13, CPU) and nothing else; no weights are downloaded (they are random).
``--check`` re-measures rows (``--ci``: the subset in harness/grid.py CI_ROWS) and exits 1 if any measured
column differs from the committed file.  See README.md.
"""
import argparse
import csv
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import grid, instruments, runs  # noqa: E402


def measure(row):
    row = dict({c: "" for c in grid.COLUMNS}, **{k: "" if v is None else str(v) for k, v in row.items()})
    row["torch_version"] = torch.__version__
    result = runs.RUNNERS[row["kind"]](row)
    row.update({k: str(v) for k, v in result.items()})
    return row


# Absolute live totals of the process: what earlier rows left alive shifts them, so a subset run compares
# them relative to start_bytes.
PHASE_COLUMNS = {"forward_peak", "after_forward", "backward_peak", "after_backward", "optimizer_peak",
                 "after_step", "after_zero_grad", "load_peak", "after_load"}


def comparable(row, column):
    value = row.get(column, "")
    if column in PHASE_COLUMNS and value != "":
        return str(int(value) - int(row["start_bytes"]))
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", help="write every row of the grid to this CSV")
    parser.add_argument("--check", help="re-measure rows and compare with this committed CSV")
    parser.add_argument("--ci", action="store_true", help="with --check: only the CI subset")
    parser.add_argument("--only", help="comma-separated row ids")
    parser.add_argument("--self-test", action="store_true", help="check the instruments and exit")
    args = parser.parse_args()

    torch.set_num_threads(1)  # one thread: every allocator event in one ordered stream
    instruments.self_test()
    print(f"instruments: self-test passed (torch {torch.__version__})", flush=True)
    if args.self_test:
        return 0

    rows = grid.rows(torch2=int(torch.__version__.split(".")[0]) >= 2)
    wanted = None
    if args.only:
        wanted = set(args.only.split(","))
    elif args.ci:
        wanted = set(grid.CI_ROWS)
    if wanted is not None:
        rows = [r for r in rows if r["id"] in wanted]

    start = time.time()
    if args.check:
        with open(args.check, newline="") as f:
            committed = {r["id"]: r for r in csv.DictReader(f)}
        failures = 0
        for row in rows:
            got = measure(row)
            want = committed.get(row["id"])
            if want is None:
                print(f"{row['id']}: not in {args.check}")
                failures += 1
                continue
            diff = [c for c in grid.COLUMNS if c not in ("torch_version", "start_bytes")
                    and comparable(got, c) != comparable(want, c)]
            print(f"{row['id']}: {'ok' if not diff else 'DIFFERS in ' + ', '.join(diff)}", flush=True)
            for c in diff:
                print(f"    {c}: committed {comparable(want, c)!r}, measured {comparable(got, c)!r}")
            failures += bool(diff)
        print(f"{len(rows)} rows re-measured in {time.time() - start:.0f} s; {failures} differ")
        return 1 if failures else 0

    if not args.out:
        parser.error("give --out, --check or --self-test")
    with open(args.out, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=grid.COLUMNS, lineterminator="\n")
        writer.writeheader()
        for row in rows:
            t0 = time.time()
            writer.writerow(measure(row))
            f.flush()
            print(f"{row['id']} {time.time() - t0:.1f} s", flush=True)
    print(f"{len(rows)} rows in {time.time() - start:.0f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
