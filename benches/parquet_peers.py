"""Parquet output against the best writers, in one run on one machine: the same rows to zstd
Parquet with arrowsmith (from the legacy Jay file and from Arrow IPC), Polars and DuckDB (from
the Arrow IPC file), then where arrowsmith's time goes and the floor of the compression.

  python benches/parquet_peers.py --bin target/release/arrowsmith --jay F.jay [--ipc F.arrow]

The rows are the Jay benchmark's (benches/jay_datatable.py --generate): int32, float64 and
str, NA where i % 97 == 0. The Arrow IPC file holds the same rows as datatable hands them to
pyarrow (`dt.fread(F).to_arrow()`), written once by pyarrow (uncompressed, record batches of
65,536 rows) and reused. Timed, each from its input file to a Parquet file, zstd:

- arrowsmith: `arrowsmith convert F.jay out.parquet --no-sync` and the same from F.arrow, a
  process per run (zstd level 3, its default);
- Polars:     `pl.read_ipc(F.arrow).write_parquet(out)` (zstd is Polars' default codec; its
              default level);
- DuckDB:     `COPY (FROM tbl) TO out (FORMAT parquet, COMPRESSION zstd)` where tbl is
              `pa.ipc.open_file(pa.memory_map(F.arrow)).read_all()`: DuckDB reads no Arrow IPC
              file without its `arrow`/`nanoarrow` extension, which is not installed offline, so
              pyarrow maps the file and DuckDB scans the Arrow table in place (the read is
              timed with the COPY).

No side flushes its output (arrowsmith runs with --no-sync). Polars and DuckDB run in this
process (no interpreter start-up counted against them); arrowsmith's times include its
process start. Times are best (median) of --reps runs after a warm-up, warm page cache, each
output deleted before each run. CPU is the median over the runs of user + system seconds of
all threads (getrusage of this process and of its children), which a loaded machine changes
less than the time. Every output is read back with pyarrow and checked to hold the same rows,
null counts and integer sum.

Then, for arrowsmith from the Jay file: the same with one rayon thread, with zstd level 1,
without compression, and Jay -> Arrow IPC (the copy out of the legacy layout); and the floor of
the compression, `zstd -3 -T2` over the uncompressed Parquet file arrowsmith writes (the bytes
the encoder makes, compressed in a few large frames rather than ~1 MiB pages: a floor, not a
target).
"""
import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import tempfile
import time


def cpu_seconds():
    """User + system CPU of this process and of its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn, reps, before=None):
    """Best and median seconds of `reps` timed runs after one untimed warm-up, and the median
    of their CPU seconds; `before` runs untimed ahead of each."""
    if before:
        before()
    fn()
    runs, cpu = [], []
    for _ in range(reps):
        if before:
            before()
        start, start_cpu = time.perf_counter(), cpu_seconds()
        fn()
        runs.append(time.perf_counter() - start)
        cpu.append(cpu_seconds() - start_cpu)
    return {"best": min(runs), "median": statistics.median(runs), "runs": runs,
            "cpu_median": statistics.median(cpu), "cpu": cpu}


def remover(path):
    def remove():
        if os.path.isdir(path):
            shutil.rmtree(path)
        elif os.path.exists(path):
            os.remove(path)
    return remove


def write_ipc(jay, ipc):
    """The Jay file's rows as an Arrow IPC file, by datatable and pyarrow (not by arrowsmith)."""
    import datatable as dt
    import pyarrow as pa

    table = dt.fread(jay).to_arrow()
    tmp = ipc + ".tmp"
    with pa.OSFile(tmp, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=65536)
    os.replace(tmp, ipc)
    print("wrote %s: %d rows, %.1f MB (pyarrow %s, from datatable %s)"
          % (ipc, table.num_rows, os.path.getsize(ipc) / 1e6, pa.__version__, dt.__version__), flush=True)


def fingerprint(path):
    """What every output must agree on: rows, each column's nulls, the integer column's sum."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    ints = [c for c in table.column_names if table.schema.field(c).type in ("int32", "int64")]
    return (table.num_rows, tuple(table.column(c).null_count for c in table.column_names),
            tuple(pc.sum(table.column(c)).as_py() for c in ints))


def arrowsmith(binary, src, out, *extra, threads=None):
    env = dict(os.environ)
    if threads:
        env["RAYON_NUM_THREADS"] = str(threads)
    argv = [binary, "convert", src, out, "--no-sync", "--quiet", *extra]
    return lambda: subprocess.run(argv, check=True, env=env)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the arrowsmith binary (a release build)")
    ap.add_argument("--jay", required=True, help="the Jay benchmark's file")
    ap.add_argument("--ipc", help="the same rows as Arrow IPC (written from --jay when absent)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()

    import duckdb
    import polars as pl
    import pyarrow as pa

    ipc = args.ipc or os.path.splitext(args.jay)[0] + ".arrow"
    if not os.path.exists(ipc):
        write_ipc(args.jay, ipc)
    scratch = tempfile.mkdtemp(prefix="arrowsmith-bench-peers-")
    out = {name: os.path.join(scratch, name + ".parquet")
           for name in ("jay", "ipc", "polars", "duckdb", "none", "zstd1", "one_thread")}
    con = duckdb.connect()

    def polars():
        pl.read_ipc(ipc).write_parquet(out["polars"])

    def duckdb_copy():
        tbl = pa.ipc.open_file(pa.memory_map(ipc)).read_all()
        con.register("tbl", tbl)
        con.execute("COPY (FROM tbl) TO '%s' (FORMAT parquet, COMPRESSION zstd)" % out["duckdb"])
        con.unregister("tbl")

    writers = [
        ("jay", "arrowsmith convert F.jay out.parquet --no-sync", arrowsmith(args.bin, args.jay, out["jay"])),
        ("ipc", "arrowsmith convert F.arrow out.parquet --no-sync", arrowsmith(args.bin, ipc, out["ipc"])),
        ("polars", "pl.read_ipc(F.arrow).write_parquet(out)", polars),
        ("duckdb", "COPY (FROM pyarrow table of F.arrow) TO out (FORMAT parquet, COMPRESSION zstd)",
         duckdb_copy),
    ]
    results = {"rows": None, "input": {"jay": os.path.getsize(args.jay), "ipc": os.path.getsize(ipc)},
               "writers": {}, "profile": {}}
    expected = None
    for name, what, run in writers:
        r = timed(run, args.reps, before=remover(out[name]))
        r.update(what=what, output_bytes=os.path.getsize(out[name]))
        got = fingerprint(out[name])
        if expected is None:
            expected = got
            results["rows"] = got[0]
        assert got == expected, "%s wrote %r, arrowsmith from Jay %r" % (name, got, expected)
        results["writers"][name] = r
        print("  %-8s best %.3f s  median %.3f s  %.1f MB" % (name, r["best"], r["median"], r["output_bytes"] / 1e6),
              flush=True)

    # Where arrowsmith's time goes, and the floor of the compression.
    ipc_out = os.path.join(scratch, "copy.arrow")
    splits = [
        ("one_thread", "the same, RAYON_NUM_THREADS=1", arrowsmith(args.bin, args.jay, out["one_thread"], threads=1)),
        ("zstd1", "the same, --compression zstd:1",
         arrowsmith(args.bin, args.jay, out["zstd1"], "--compression", "zstd:1")),
        ("none", "the same, --compression none (encoding only)",
         arrowsmith(args.bin, args.jay, out["none"], "--compression", "none")),
        ("to_ipc", "Jay -> Arrow IPC (`convert F.jay F.arrow --no-sync`)", arrowsmith(args.bin, args.jay, ipc_out)),
    ]
    for name, what, run in splits:
        target = ipc_out if name == "to_ipc" else out[name]
        r = timed(run, args.reps, before=remover(target))
        r.update(what=what, output_bytes=os.path.getsize(target))
        results["profile"][name] = r
    floor_out = out["none"] + ".zst"
    r = timed(lambda: subprocess.run(["zstd", "-q", "-3", "-T2", "-f", out["none"], "-o", floor_out], check=True),
              args.reps, before=remover(floor_out))
    r.update(what="zstd -3 -T2 over the uncompressed Parquet file (the compression's floor)",
             output_bytes=os.path.getsize(floor_out))
    results["profile"]["zstd_floor"] = r
    shutil.rmtree(scratch)

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print("machine: %s, %d cores, %s; load average %s"
          % (cpu, os.cpu_count(), platform.platform(), " ".join(open("/proc/loadavg").read().split()[:3])))
    print("%d rows; Jay %.1f MB, Arrow IPC %.1f MB; polars %s, duckdb %s, pyarrow %s; "
          "best (median) of %d, seconds, warm cache, no flush"
          % (results["rows"], results["input"]["jay"] / 1e6, results["input"]["ipc"] / 1e6,
             pl.__version__, duckdb.__version__, pa.__version__, args.reps))
    print()
    best_peer = min(results["writers"][n]["best"] for n in ("polars", "duckdb"))
    best_peer_cpu = min(results["writers"][n]["cpu_median"] for n in ("polars", "duckdb"))
    print("| writer | from | time | × the best peer | CPU s (median) | × the best peer's CPU | output |")
    print("|---|---|---|---|---|---|---|")
    labels = {"jay": ("arrowsmith", "Jay"), "ipc": ("arrowsmith", "Arrow IPC"),
              "polars": ("Polars", "Arrow IPC"), "duckdb": ("DuckDB", "Arrow IPC")}
    for name, r in results["writers"].items():
        who, source = labels[name]
        print("| %s | %s | %.3f (%.3f) | %.2f | %.2f | %.2f | %.1f MB |"
              % (who, source, r["best"], r["median"], best_peer / r["best"], r["cpu_median"],
                 best_peer_cpu / r["cpu_median"], r["output_bytes"] / 1e6))
    print()
    jay = results["writers"]["jay"]
    print("| arrowsmith, from the Jay file | time | × the default's | CPU s (median) | output |")
    print("|---|---|---|---|---|")
    print("| zstd level 3 (the default) | %.3f (%.3f) | 1.00 | %.2f | %.1f MB |"
          % (jay["best"], jay["median"], jay["cpu_median"], jay["output_bytes"] / 1e6))
    for name, r in results["profile"].items():
        print("| %s | %.3f (%.3f) | %.2f | %.2f | %.1f MB |"
              % (r["what"], r["best"], r["median"], r["best"] / jay["best"], r["cpu_median"],
                 r["output_bytes"] / 1e6))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
