"""The main job, side by side: legacy file -> Parquet (zstd) with the `arrowsmith` command line,
against the Python pipeline a user would otherwise write, in one run on one machine.

  python benches/parquet_reference.py --bin target/release/arrowsmith --jay F.jay --bcolz D.bcolz

- Jay:   `arrowsmith convert F.jay out.parquet`
         vs `pq.write_table(datatable.fread(F).to_arrow(), out, compression="zstd", compression_level=3)`
- bcolz: `arrowsmith convert D.bcolz out.parquet`
         vs `pq.write_table(pa.table(columns of bcolz.open(D)[:]), out, compression="zstd", compression_level=3)`

arrowsmith runs as users run it, a process per conversion, once with all threads and once with
RAYON_NUM_THREADS=1, so the table shows how it scales, and once with --no-sync: pyarrow does not
flush its output to disk and `arrowsmith convert` does by default, so that run is the one that
does the Python pipeline's work, like for like. The Python steps run in this process
(no interpreter start-up counted against them). Times are best (median) of --reps runs, warm
page cache. The outputs are checked to hold the same rows.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile
import time


def timed(fn, reps):
    runs = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return {"best": min(runs), "median": statistics.median(runs), "runs": runs}


def arrowsmith(binary, src, out, threads, sync=True):
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    argv = [binary, "convert", src, out, "--quiet"] + ([] if sync else ["--no-sync"])

    def run():
        if os.path.exists(out):
            os.remove(out)
        subprocess.run(argv, check=True, env=env)

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the arrowsmith binary (a release build)")
    ap.add_argument("--jay")
    ap.add_argument("--bcolz")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    import pyarrow as pa
    import pyarrow.parquet as pq

    # The level `arrowsmith convert` writes by default (zstd's own default); pyarrow's default
    # is 1, which would compare unequal work.
    ZSTD_LEVEL = 3

    results = {}
    out_dir = tempfile.mkdtemp(prefix="arrowsmith-bench-parquet-")
    ours_out = os.path.join(out_dir, "ours.parquet")
    theirs_out = os.path.join(out_dir, "theirs.parquet")
    cases = []
    if args.jay:
        import datatable as dt

        def python_jay():
            pq.write_table(dt.fread(args.jay).to_arrow(), theirs_out, compression="zstd", compression_level=ZSTD_LEVEL)

        cases.append(("jay", args.jay, python_jay, "fread(F).to_arrow() + pq.write_table"))
    if args.bcolz:
        import bcolz

        def python_bcolz():
            rows = bcolz.open(args.bcolz, mode="r")[:]  # a numpy structured array
            table = pa.table({name: rows[name] for name in rows.dtype.names})
            pq.write_table(table, theirs_out, compression="zstd", compression_level=ZSTD_LEVEL)

        cases.append(("bcolz", args.bcolz, python_bcolz, "bcolz.open(D)[:] → pa.table + pq.write_table"))

    for name, src, python, what in cases:
        # One of each first: warms the page cache and checks both write the same rows.
        arrowsmith(args.bin, src, ours_out, None)()
        python()
        rows = (pq.read_metadata(ours_out).num_rows, pq.read_metadata(theirs_out).num_rows)
        assert rows[0] == rows[1], "%s: arrowsmith wrote %d rows, Python %d" % ((name,) + rows)
        results[name] = {
            "rows": rows[0],
            "input_bytes": sum(
                os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(src) for f in fs
            ) if os.path.isdir(src) else os.path.getsize(src),
            "python_pipeline": what,
            "python": timed(python, args.reps),
            "arrowsmith_all_threads": timed(arrowsmith(args.bin, src, ours_out, None), args.reps),
            "arrowsmith_1_thread": timed(arrowsmith(args.bin, src, ours_out, 1), args.reps),
            "arrowsmith_no_sync": timed(arrowsmith(args.bin, src, ours_out, None, sync=False), args.reps),
            "output_bytes": os.path.getsize(ours_out),
            "python_output_bytes": os.path.getsize(theirs_out),
        }

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("machine: %s, %d cores, %s; load average %s"
          % (cpu, os.cpu_count(), platform.platform(), " ".join(open("/proc/loadavg").read().split()[:3])))
    print("pyarrow %s; times best (median) in seconds, warm cache, zstd level 3 on both sides" % pa.__version__)
    print()
    print("| input | rows | Python pipeline | arrowsmith, all threads (durable) | × Python | "
          "arrowsmith --no-sync (like Python) | × Python | arrowsmith, 1 thread | scaling |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, r in results.items():
        py, all_t, one = r["python"], r["arrowsmith_all_threads"], r["arrowsmith_1_thread"]
        nosync = r["arrowsmith_no_sync"]
        print("| %s | %d | %.3f (%.3f) | %.3f (%.3f) | %.2f | %.3f (%.3f) | %.2f | %.3f (%.3f) | %.2f× |" % (
            name, r["rows"], py["best"], py["median"], all_t["best"], all_t["median"],
            py["best"] / all_t["best"], nosync["best"], nosync["median"], py["best"] / nosync["best"],
            one["best"], one["median"], one["best"] / all_t["best"]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
