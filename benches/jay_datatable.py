#!/usr/bin/env python3
"""
datatable's side of the Jay benchmark (benches/jay.rs is arrowsmith's side; scripts/bench-jay.sh
runs both and prints them together).

    jay_datatable.py --generate [--rows N] FILE.jay    # write the benchmark file with datatable
    jay_datatable.py [--reps R] [--json OUT] FILE.jay   # time datatable (and cat) on it

The frame: row i has int32 i, float64 i * 0.5, str32 str(i % 100003); every column is NA where
i % 97 == 0. Timed, with the file in the page cache ("warm"):

* `cat FILE > /dev/null` -- the floor: reading the bytes once;
* `dt.fread(FILE).to_arrow()` -- datatable's way from a Jay file to Arrow (arrowsmith's
  Jay -> Arrow is measured against it);
* `fread(FILE)` + `materialize(to_memory=True)` -- datatable loading the file into memory,
  for context;
* `to_jay(OUT)` of a freshly built frame -- datatable's writer when it has to count the NAs,
  which is what arrowsmith's Arrow -> Jay does too (the frame is rebuilt, untimed, before
  every run; OUT is deleted before every run).

Each step prints best and median seconds of R runs and MB/s of Jay file bytes.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import datatable as dt
from datatable import f


def build_frame(nrows):
    base = dt.Frame(i=range(nrows))
    DT = base[:, {"i32": dt.as_type(f.i, dt.Type.int32),
                  "f64": dt.as_type(f.i, dt.Type.float64) * 0.5,
                  "s32": dt.as_type(f.i % 100003, dt.Type.str32)}]
    DT[f.i32 % 97 == 0, :] = None
    DT.materialize()
    return DT


def timed(fn, reps, setup=None, warmup=True):
    """Runs fn() `reps` times (after one untimed warm-up run if asked); returns the seconds."""
    if warmup:
        if setup:
            setup()
        fn()
    out = []
    for _ in range(reps):
        if setup:
            setup()
        gc.collect()
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def generate(path, nrows):
    t0 = time.perf_counter()
    DT = build_frame(nrows)
    tmp = path + ".tmp"
    DT.to_jay(tmp)
    os.replace(tmp, path)
    print("wrote %s: %d rows, %.1f MB, in %.1f s (datatable %s)"
          % (path, nrows, os.path.getsize(path) / 1e6, time.perf_counter() - t0, dt.__version__))


def bench(path, reps):
    size = os.path.getsize(path)
    nrows = dt.fread(path).nrows
    results = {}

    def report(key, label, times):
        best, median = min(times), statistics.median(times)
        results[key] = {"label": label, "best": best, "median": median, "runs": times}
        print("  %-44s best %7.3f s  median %7.3f s  %8.0f MB/s" % (label, best, median, size / 1e6 / best),
              flush=True)

    print("datatable %s, %d threads; %s: %d rows, %.1f MB" % (dt.__version__, dt.options.nthreads, path, nrows,
                                                             size / 1e6), flush=True)

    def cat():
        subprocess.run(["cat", path], stdout=subprocess.DEVNULL, check=True)
    # cat is cheap and its time varies most with the machine's load: more runs
    report("cat", "cat FILE > /dev/null, warm", timed(cat, max(reps, 15)))

    def to_arrow():
        tbl = dt.fread(path).to_arrow()
        assert tbl.num_rows == nrows
    report("fread_to_arrow", "dt.fread(FILE).to_arrow(), warm", timed(to_arrow, reps))

    def load():
        dt.fread(path).materialize(to_memory=True)
    report("fread_load", "dt.fread(FILE) + materialize(to_memory), warm", timed(load, reps))

    out = path + ".datatable-out.jay"
    frames = []

    def fresh():
        if os.path.exists(out):
            os.remove(out)
        frames.clear()
        gc.collect()
        frames.append(build_frame(nrows))

    def to_jay():
        frames[0].to_jay(out)
    report("to_jay_fresh", "to_jay(OUT) of a fresh frame", timed(to_jay, reps, setup=fresh, warmup=False))
    os.remove(out)
    frames.clear()

    return {"file": path, "file_bytes": size, "rows": nrows, "datatable": dt.__version__,
            "nthreads": dt.options.nthreads, "python": platform.python_version(), "steps": results}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--generate", action="store_true", help="write FILE with datatable and stop")
    ap.add_argument("--rows", type=int, default=int(os.environ.get("ARROWSMITH_BENCH_ROWS", "10000000")))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this file")
    args = ap.parse_args()
    if args.generate:
        generate(args.file, args.rows)
        return 0
    res = bench(args.file, args.reps)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
