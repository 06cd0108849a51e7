"""`arrowsmith sql` over a multi-fragment file of each format at 1, 2, ... target partitions,
one decode thread per reader (RAYON_NUM_THREADS=1): how the scan scales with partitions, the
way it shows on any machine (issue 29 section 4; docs/performance.md, "SQL: partitions").

    scripts/bench-sql-partitions.sh                       # builds the release CLI, then this
    python3 benches/sql_partitions.py --bin target/release/arrowsmith --cores 1,2,4
    python3 benches/sql_partitions.py --bin target/debug/arrowsmith --rows 200000 --repeat 1

The inputs are made by arrowsmith itself, once, into --dir (default target/bench-sql/) and
reused: an Arrow IPC file of --rows rows (int32 `key = i % 1000`, float64 `value = i * 0.25`,
int64 `id = i`, from DataFusion's generate_series), converted to Jay, DataSeries (lz4, 1 MiB
extents), bcolz (--bcolz-chunklen), a Filo set (--filo-chunk-size) and VS (one point per
row of a --vs-rows file: a 4-float32 vector and the row's `id` as app_data). Each run is a
fresh process: `arrowsmith sql "SET datafusion.execution.target_partitions = N; QUERY"`, held
to N cores (the first N this process may use) unless --no-pin; the time is the process's wall
time, best (median) of --repeat runs after one warm-up, and its CPU time (user + system,
median). The result is checked (every row counted once) and EXPLAIN confirms how many
partitions the scan had. Needs only the Python standard library.

Why N cores: a query at one partition is already two threads at work, the reader decoding and
DataFusion aggregating what it hands on (the query's thread), so unpinned on a 2-core machine
the 1-partition run has both cores and 2 partitions can only add what the two threads left
idle. Held to N cores, each partition has one, as each would on a machine with more cores than
partitions: the ratio that machine would show.
"""
import argparse
import csv
import io
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The aggregate of datafusion/benches/sql.rs: every column decoded, a small hash aggregate.
TABLE_QUERY = "SELECT key, count(*) AS n, sum(value), min(id), max(id) FROM {t} GROUP BY key"
# VS holds points: the vector and the app_data (JSON text, made from each point's msgpack).
VS_QUERY = ("SELECT count(*) AS n, sum(vector[1]), max(vector[4]), max(length(app_data)) "
            "FROM {t}")


class Format:
    def __init__(self, name, extension, convert_args, query):
        self.name = name
        self.extension = extension
        self.convert_args = convert_args
        self.query = query


def formats(args):
    table = [
        Format("jay", ".jay", [], TABLE_QUERY),
        Format("dataseries", ".ds",
               ["--compression", "lz4", "--extent-size", str(args.extent_size)], TABLE_QUERY),
        Format("bcolz", ".bcolz", ["--bcolz-chunklen", str(args.bcolz_chunklen)], TABLE_QUERY),
        Format("filo", ".filo", ["--filo-chunk-size", str(args.filo_chunk_size)], TABLE_QUERY),
        Format("vs", ".vs", [], VS_QUERY),
    ]
    wanted = args.formats.split(",")
    unknown = set(wanted) - {f.name for f in table}
    if unknown:
        sys.exit("unknown format(s) %s; known: %s" % (
            ", ".join(sorted(unknown)), ", ".join(f.name for f in table)))
    return [f for f in table if f.name in wanted]


def run(command, env=None, cores=None):
    """`command`'s standard output; with `cores`, the process runs on that set of CPUs."""
    pin = None if cores is None else (lambda: os.sched_setaffinity(0, cores))
    done = subprocess.run(command, capture_output=True, text=True, env=env, preexec_fn=pin)
    if done.returncode != 0:
        sys.exit("failed (exit %d): %s\n%s" % (done.returncode, " ".join(command), done.stderr))
    return done.stdout


def sql_literal(path):
    return "'" + path.replace("'", "''") + "'"


def make_inputs(args, chosen):
    """The source IPC files (made by arrowsmith's own COPY) and each format's file converted
    from them; returns {format: (path, rows)}."""
    os.makedirs(args.dir, exist_ok=True)
    made = {}
    for fmt in chosen:
        rows = args.vs_rows if fmt.name == "vs" else args.rows
        stem = "points-%d.arrow" if fmt.name == "vs" else "rows-%d.arrow"
        source = os.path.join(args.dir, stem % rows)
        if not os.path.exists(source):
            print("making %s" % source, file=sys.stderr)
            if fmt.name == "vs":
                select = ("SELECT arrow_cast(make_array(CAST(value AS FLOAT), "
                          "CAST(value %% 7 AS FLOAT), CAST(value %% 11 AS FLOAT), "
                          "CAST(value * 0.5 AS FLOAT)), 'FixedSizeList(4, Float32)') AS vector, "
                          "value AS id FROM generate_series(0, %d) " % (rows - 1))
            else:
                select = ("SELECT CAST(value %% 1000 AS INT) AS key, value * 0.25 AS value, "
                          "value AS id FROM generate_series(0, %d)" % (rows - 1))
            run([args.bin, "sql", "COPY (%s) TO %s" % (select, sql_literal(source))])
        target = os.path.join(args.dir, "rows-%d%s" % (rows, fmt.extension))
        if not os.path.exists(target):
            print("making %s" % target, file=sys.stderr)
            run([args.bin, "convert", source, target, "--quiet", "--no-sync"] + fmt.convert_args)
        made[fmt.name] = (target, rows)
    return made


def fragment_count(args, path, rows, partitions):
    """The fragments of `path` as a scan at `partitions` partitions splits it (about rows /
    partitions each, at most the core's default of 1,048,576)."""
    target = min(max(1, -(-rows // partitions)), 1_048_576)
    listing = run([args.bin, "fragments", path, "--target-rows", str(target)])
    return sum(1 for line in listing.splitlines() if line.strip())


def scan_partitions(args, path, query, partitions):
    """How many partitions DataFusion's scan of `path` has at `partitions` target partitions
    (the `file_groups={N groups: …}` of the DataSourceExec in EXPLAIN)."""
    statement = "SET datafusion.execution.target_partitions = %d; EXPLAIN %s" % (partitions, query)
    plan = run([args.bin, "sql", statement, "--format", "csv"])
    found = re.search(r"file_groups=\{(\d+) groups?", plan)
    if not found:
        sys.exit("no DataSourceExec with file_groups in the plan of %s:\n%s" % (path, plan))
    return int(found.group(1))


def cores_for(args, partitions):
    """The CPUs a run at `partitions` partitions is held to: the first `partitions` of those
    this process may use; None unpinned."""
    if not args.pin:
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if partitions > len(allowed):
        sys.exit("%d partitions need %d cores, this process may use %d; run with --no-pin "
                 "or fewer --cores" % (partitions, partitions, len(allowed)))
    return set(allowed[:partitions])


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(args, query, partitions, rows, env):
    """The wall and CPU seconds of one run."""
    statement = "SET datafusion.execution.target_partitions = %d; %s" % (partitions, query)
    command = [args.bin, "sql", statement, "--format", "csv"]
    cores = cores_for(args, partitions)
    cpu = children_cpu()
    start = time.perf_counter()
    out = run(command, env, cores)
    elapsed = time.perf_counter() - start
    cpu = children_cpu() - cpu
    counted = sum(int(r["n"]) for r in csv.DictReader(io.StringIO(out)))
    if counted != rows:
        sys.exit("%s counted %d rows, not %d:\n%s" % (" ".join(command), counted, rows, out))
    return elapsed, cpu


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.environ.get(
        "ARROWSMITH_BIN", os.path.join(ROOT, "target", "release", "arrowsmith")))
    parser.add_argument("--dir", default=os.path.join(ROOT, "target", "bench-sql"))
    parser.add_argument("--cores", default="1,2",
                        help="target partitions to run at, each on as many cores (see --no-pin), "
                        "comma-separated (default 1,2)")
    parser.add_argument("--no-pin", dest="pin", action="store_false",
                        help="run every partition count on all the cores this process may use")
    parser.add_argument("--formats", default="jay,dataseries,bcolz,filo,vs")
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--vs-rows", type=int,
                        help="points of the VS file (one block each) [default: --rows / 4]")
    parser.add_argument("--extent-size", type=int, default=1 << 20, help="DataSeries extent bytes")
    parser.add_argument("--bcolz-chunklen", type=int, default=262_144)
    parser.add_argument("--filo-chunk-size", type=int, default=262_144)
    parser.add_argument("--reader-threads", type=int, default=1,
                        help="RAYON_NUM_THREADS of the CLI (0: leave it unset)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    if args.vs_rows is None:
        args.vs_rows = max(1, args.rows // 4)
    cores = [int(c) for c in args.cores.split(",")]
    if not cores or min(cores) < 1:
        sys.exit("--cores: a list of positive numbers, such as 1,2,4")
    if not os.access(args.bin, os.X_OK):
        sys.exit("%s: no arrowsmith binary; build it (cargo build --release --bin arrowsmith) "
                 "or pass --bin" % args.bin)

    chosen = formats(args)
    inputs = make_inputs(args, chosen)
    env = dict(os.environ)
    if args.reader_threads:
        env["RAYON_NUM_THREADS"] = str(args.reader_threads)

    version = run([args.bin, "--version"]).strip()
    print("%s (%s); RAYON_NUM_THREADS=%s; %s; best (median) of %d runs after a warm-up"
          % (version, args.bin, env.get("RAYON_NUM_THREADS", "unset"),
             "N partitions on N cores" if args.pin else "unpinned", args.repeat))
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())
    results = []
    for fmt in chosen:
        path, rows = inputs[fmt.name]
        query = fmt.query.format(t=sql_literal(path))
        entry = {"format": fmt.name, "path": path, "rows": rows,
                 "fragments": fragment_count(args, path, rows, max(cores)), "runs": {}}
        for n in cores:
            groups = scan_partitions(args, path, query, n)
            timed(args, query, n, rows, env)  # warm-up: the page cache, the binary
            measured = [timed(args, query, n, rows, env) for _ in range(args.repeat)]
            times = [wall for wall, _ in measured]
            cpu = statistics.median(cpu for _, cpu in measured)
            entry["runs"][n] = {"scan_partitions": groups, "best": min(times),
                                "median": statistics.median(times), "cpu": cpu}
            print("  %s at %d partition(s): %d scan partition(s), best %.3f s, median %.3f s, "
                  "CPU %.3f s" % (fmt.name, n, groups, min(times), statistics.median(times), cpu),
                  file=sys.stderr)
        results.append(entry)
    print("load average after: %.1f %.1f %.1f" % os.getloadavg())
    print()
    table(results, cores, args.pin)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"cores": cores, "pinned": args.pin, "results": results}, out, indent=1)


def table(results, cores, pinned):
    first = cores[0]
    head = "| format | rows | fragments at %d partitions | " % max(cores) + " | ".join(
        "%d partition%s%s" % (n, "" if n == 1 else "s",
                              (" on %d core%s" % (n, "" if n == 1 else "s")) if pinned else "")
        for n in cores)
    speedups = [n for n in cores if n != first]
    head += "".join(" | %d → %d" % (first, n) for n in speedups) + " |"
    print(head)
    print("|---" * (3 + len(cores) + len(speedups)) + "|")
    for entry in results:
        runs = entry["runs"]
        cells = ["%.3f s (%.3f; CPU %.3f)%s" % (
            runs[n]["best"], runs[n]["median"], runs[n]["cpu"],
            "" if runs[n]["scan_partitions"] == n else
            ", %d scan partition%s" % (runs[n]["scan_partitions"],
                                       "" if runs[n]["scan_partitions"] == 1 else "s"))
            for n in cores]
        ratios = ["%.2f×" % (runs[first]["best"] / runs[n]["best"]) for n in speedups]
        print("| %s | %s | %d | %s |" % (
            entry["format"], "{:,}".format(entry["rows"]), entry["fragments"],
            " | ".join(cells + ratios)))


if __name__ == "__main__":
    main()
