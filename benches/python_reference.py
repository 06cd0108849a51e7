"""The Python package side by side with the reference implementations, in one process and one
run (issue 11's goals):

    arrowsmith.read(jay)              vs  datatable.fread(jay).to_arrow()           goal >= 10x
    arrowsmith.read(bcolz)            vs  bcolz.open(p)[:]                          goal >= 2x
    arrowsmith.write(df, "x.jay")     vs  datatable.Frame(df.to_arrow()).to_jay()   goal >= 2x
                                          (df: a Polars DataFrame)

The write is timed twice: arrowsmith's default (durable: the file is fsynced before its rename)
and with durable=False, which is what datatable does (it never syncs), so like is compared
with like. Each write makes a new file, as `arrowsmith.write(df, "x.jay")` does (its default
mode refuses an existing target): the previous run's file is deleted, and everything synced,
before the clock starts, for both sides alike.

The inputs are the 10M-row files of scripts/bench-jay.sh and scripts/bench-bcolz.sh (written by
datatable and bcolz, reused from target/bench-jay and target/bench-bcolz when present). Needs a
release build of the package (`maturin develop --release` or `pip install .`) in a Python with
datatable, bcolz-zipline, pyarrow and polars (python/tests/requirements.txt):

    python benches/python_reference.py [--rows N] [--reps 5] [--json out.json]
"""
import argparse
import gc
import importlib.util
import json
import os
import pathlib
import platform
import statistics
import sys
import time

import arrowsmith

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOALS = {"read_jay": 10.0, "read_bcolz": 2.0, "write_jay": 2.0, "write_jay_no_sync": 2.0}


def load(name):
    """A sibling benchmark script as a module, for its input generator."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benches" / (name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(fn, reps, setup=None):
    if setup:
        setup()
    fn()  # warm-up: page cache, allocator, thread pools
    runs = []
    for _ in range(reps):
        if setup:
            setup()
        gc.collect()
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return {"best": min(runs), "median": statistics.median(runs), "runs": runs}


def inputs(rows):
    jay = ROOT / "target" / "bench-jay" / ("bench_3col_%d.jay" % rows)
    if not jay.exists():
        jay.parent.mkdir(parents=True, exist_ok=True)
        load("jay_datatable").generate(str(jay), rows)
    bcolz_dir = ROOT / "target" / "bench-bcolz" / ("bench_3col_%d.bcolz" % rows)
    if not bcolz_dir.exists():
        bcolz_dir.parent.mkdir(parents=True, exist_ok=True)
        load("bcolz_reference").generate(rows, str(bcolz_dir))
    return jay, bcolz_dir


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=int(os.environ.get("ARROWSMITH_BENCH_ROWS", "10000000")))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="also write the results to this file")
    ap.add_argument("--allow-debug", action="store_true", help="run on a debug build (to test this script)")
    args = ap.parse_args()
    if arrowsmith._arrowsmith._debug_build and not args.allow_debug:
        sys.exit("arrowsmith is a debug build: build it with `maturin develop --release` or `pip install .`")

    import bcolz
    import datatable
    import polars as pl

    jay, bcolz_dir = inputs(args.rows)
    scratch = ROOT / "target" / "bench-python"
    scratch.mkdir(parents=True, exist_ok=True)
    ours_jay, theirs_jay = scratch / "ours.jay", scratch / "theirs.jay"
    df = pl.DataFrame(arrowsmith.open(jay))

    def fresh(path):
        """Before each write (untimed): no target, as `arrowsmith.write(df, "x.jay")` requires,
        and the previous file's dirty pages on disk, so neither side pays for the other's
        writeback or for freeing an old file."""
        def setup():
            if path.exists():
                path.unlink()
            os.sync()
        return setup

    pairs = {
        "read_jay": (lambda: arrowsmith.read(jay),
                     lambda: datatable.fread(str(jay)).to_arrow(), None, None),
        "read_bcolz": (lambda: arrowsmith.read(bcolz_dir),
                       lambda: bcolz.open(str(bcolz_dir), mode="r")[:], None, None),
        "write_jay": (lambda: arrowsmith.write(df, ours_jay),
                      lambda: datatable.Frame(df.to_arrow()).to_jay(str(theirs_jay)),
                      fresh(ours_jay), fresh(theirs_jay)),
        "write_jay_no_sync": (lambda: arrowsmith.write(df, ours_jay, durable=False),
                              lambda: datatable.Frame(df.to_arrow()).to_jay(str(theirs_jay)),
                              fresh(ours_jay), fresh(theirs_jay)),
    }
    results = {}
    for name, (ours, theirs, ours_setup, theirs_setup) in pairs.items():
        a = timed(ours, args.reps, ours_setup)
        b = timed(theirs, args.reps, theirs_setup)
        results[name] = {"arrowsmith": a, "reference": b, "speedup": b["best"] / a["best"],
                         "goal": GOALS[name]}
    for path in (ours_jay, theirs_jay):
        if path.exists():
            path.unlink()

    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")),
               platform.processor())
    print("%d rows; %s, %d cores; Python %s; arrowsmith %s, datatable %s, bcolz %s, polars %s"
          % (args.rows, cpu, os.cpu_count(), platform.python_version(), arrowsmith.__version__,
             datatable.__version__, bcolz.__version__, pl.__version__))
    print("%-18s %14s %14s %9s %6s" % ("step", "arrowsmith s", "reference s", "speedup", "goal"))
    for name, r in results.items():
        print("%-18s %14.3f %14.3f %8.2fx %5.0fx%s" % (
            name, r["arrowsmith"]["best"], r["reference"]["best"], r["speedup"], r["goal"],
            "" if r["speedup"] >= r["goal"] else "  (below goal)"))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"rows": args.rows, "cpu": cpu, "cores": os.cpu_count(), "steps": results}, fh, indent=1)


if __name__ == "__main__":
    main()
