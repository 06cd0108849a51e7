"""The bcolz side of the bcolz benchmark (scripts/bench-bcolz.sh): generates the benchmark ctable
with bcolz-zipline and times bcolz's own read (to numpy) and write (from numpy) of it.

  python benches/bcolz_reference.py --generate --rows N DIR   # write the dataset with bcolz
  python benches/bcolz_reference.py --reps 5 --json OUT DIR   # time bcolz on it

The data is the spec's B8 table: `id` int64 0..n, `price` float64 random walk in cents, `sym`
|S10 drawn from 8 symbols; lz4, clevel 5, byte shuffle (bcolz's defaults), chunklen chosen by
bcolz from the length (65536 / 65536 / 52428 for 10 M rows). bcolz uses all cores (its default
Blosc thread count).
"""
import argparse
import json
import os
import shutil
import statistics
import time

import numpy as np

import bcolz

NAMES = ["id", "price", "sym"]
SYMBOLS = np.array([b"AAPL", b"MSFT", b"GOOG", b"AMZN", b"BRK.B", b"JPM", b"XOM", b"TSLA"], dtype="S10")


def columns(rows, seed=42):
    rng = np.random.default_rng(seed)
    return [
        np.arange(rows, dtype=np.int64),
        np.round(10000 + np.cumsum(rng.integers(-50, 51, rows)), 0) / 100.0,
        SYMBOLS[rng.integers(0, len(SYMBOLS), rows)],
    ]


def cparams():
    return bcolz.cparams(clevel=5, shuffle=1, cname="lz4")


def generate(rows, path):
    if os.path.exists(path):
        shutil.rmtree(path)
    bcolz.ctable(columns=columns(rows), names=NAMES, rootdir=path, mode="w", cparams=cparams()).flush()


def timed(fn, reps):
    runs = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t)
    return {"best": min(runs), "median": statistics.median(runs), "runs": runs}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--generate", action="store_true")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.generate:
        generate(args.rows, args.dir)
        return
    ct = bcolz.open(args.dir, mode="r")
    rows = len(ct)
    arrays = [ct[name][:] for name in NAMES]
    raw = sum(a.nbytes for a in arrays)
    out = args.dir.rstrip("/") + ".bcolz-rewrite"

    def read():
        t = bcolz.open(args.dir, mode="r")
        for name in NAMES:
            t[name][:]

    def write():
        bcolz.ctable(columns=arrays, names=NAMES, rootdir=out, mode="w", cparams=cparams()).flush()

    steps = {"read_to_numpy": timed(read, args.reps), "write_from_numpy": timed(write, args.reps)}
    shutil.rmtree(out, ignore_errors=True)
    result = {"dir": args.dir, "rows": rows, "raw_bytes": raw, "bcolz": bcolz.__version__,
              "blosc_threads": bcolz.blosc_version(), "ncores": os.cpu_count(), "steps": steps}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(result, fh, indent=1)
    print(json.dumps({k: v["best"] for k, v in steps.items()}))


if __name__ == "__main__":
    main()
