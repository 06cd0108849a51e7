"""Reading a directory of multi-extent DataSeries files with arrowsmith.ray, and the same rows
as Parquet with Ray's own `ray.data.read_parquet`, on local Ray clusters of each --cores
(num_cpus=1, then 2, ...), beside a single-process `arrowsmith.read` of the same files; with
--jobs, also the two typical jobs of docs/distributed.md (DataSeries directory -> Parquet,
Parquet -> a directory of Jay files), at the largest --cores.

    target/venv/bin/python benches/ray_scaling.py                 # 4 files x 500,000 rows
    target/venv/bin/python benches/ray_scaling.py --files 4 --rows 2000000 --target-rows 500000
    target/venv/bin/python benches/ray_scaling.py --cores 1,2,4,8 --jobs   # a bigger machine

The inputs are written once into --dir (default target/bench-ray/) and reused: the DataSeries
files, and their rows as Parquet with pyarrow's defaults, one file per arrowsmith fragment. Both
readers pack small pieces into read tasks of up to Ray's block size; the run prints how many
tasks each ran. Each worker decodes on --worker-threads threads (default 1, as Ray's Parquet
read tasks do). Each timing is the best (and median) of --repeat runs, the two readers taking
turns, after a warm-up job that starts the cluster's workers. Prints a Markdown table
(docs/performance.md, "Ray Data") with arrowsmith ÷ Ray's Parquet reader at each --cores
(goal <= 1.0). Needs ray[data] and pyarrow.
"""
import argparse
import os
import re
import shutil
import statistics
import time

import numpy as np
import pyarrow as pa

import arrowsmith

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def generate(directory, files, rows, extent_size):
    """NFS-trace-like files: time, op, bytes, latency and a client name per row."""
    os.makedirs(directory, exist_ok=True)
    rng = np.random.default_rng(7)
    clients = np.array(["client-%02d" % i for i in range(40)], dtype=object)
    for k in range(files):
        path = os.path.join(directory, "trace-%03d.ds" % k)
        if os.path.exists(path):
            continue
        start = k * rows
        table = pa.table({
            "time": pa.array(np.arange(start, start + rows, dtype=np.int64) * 1_000),
            "op": pa.array(rng.integers(0, 20, rows).astype(np.int32)),
            "bytes": pa.array(rng.integers(0, 1 << 20, rows)),
            "latency": pa.array(rng.random(rows)),
            "client": pa.array(clients[rng.integers(0, len(clients), rows)], pa.string()),
        })
        arrowsmith.write(table, path, extent_size=extent_size, compression="lz4")


def parquet_copy(directory, inputs, names, target_rows):
    """The same rows as Parquet (pyarrow's defaults, snappy), one file per arrowsmith fragment;
    Ray's Parquet reader decides how many of them each of its read tasks reads."""
    import pyarrow.parquet as pq

    if os.path.isdir(directory):
        return directory
    partial = directory + ".partial"
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    part = 0
    for name in names:
        for fragment in arrowsmith.fragments(os.path.join(inputs, name), target_rows=target_rows):
            with arrowsmith.open_fragment(fragment) as reader:
                table = pa.Table.from_batches([pa.record_batch(b) for b in reader])
            pq.write_table(table.replace_schema_metadata(None),
                           os.path.join(partial, "part-%05d.parquet" % part))
            part += 1
    os.rename(partial, directory)
    return directory


def read_tasks(dataset):
    """The tasks of the dataset's read operator, from Ray's stats ("ReadX: N tasks executed")."""
    found = re.findall(r"Read\w*(?:->\S+)?: (\d+) tasks? executed", dataset.stats())
    return int(found[-1]) if found else None


def timed(run):
    start = time.perf_counter()
    result = run()
    return time.perf_counter() - start, result


def best(repeat, run):
    times = []
    result = None
    for _ in range(repeat):
        elapsed, result = timed(run)
        times.append(elapsed)
    return min(times), statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(ROOT, "target", "bench-ray"))
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--rows", type=int, default=500_000, help="rows per file")
    parser.add_argument("--extent-size", type=int, default=1 << 20, help="DataSeries extent bytes")
    parser.add_argument("--target-rows", type=int, default=125_000, help="rows per fragment")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cores", default="1,2",
                        help="the num_cpus of the local Ray cluster, one run each (default 1,2)")
    parser.add_argument("--jobs", action="store_true",
                        help="also time the typical jobs (at the largest --cores)")
    parser.add_argument("--worker-threads", type=int, default=1,
                        help="decode threads per Ray worker (RAYON_NUM_THREADS in the workers; "
                             "default 1, as Ray's Parquet read tasks use one; 0: the reader's "
                             "own choice, every core)")
    args = parser.parse_args()
    cores = [int(c) for c in args.cores.split(",")]
    if not cores or min(cores) < 1:
        parser.error("--cores: a list of positive numbers, such as 1,2,4")

    import ray

    import arrowsmith.ray

    inputs = os.path.join(args.dir, "traces-%dx%d" % (args.files, args.rows))
    generate(inputs, args.files, args.rows, args.extent_size)
    names = sorted(os.listdir(inputs))
    size = sum(os.path.getsize(os.path.join(inputs, n)) for n in names)
    fragments = sum(len(arrowsmith.fragments(os.path.join(inputs, n), target_rows=args.target_rows))
                    for n in names)
    parquet = parquet_copy(os.path.join(args.dir, "parquet-%dx%d-%d" % (
        args.files, args.rows, args.target_rows)), inputs, names, args.target_rows)
    parquet_size = sum(os.path.getsize(os.path.join(parquet, n)) for n in os.listdir(parquet))
    total = args.files * args.rows
    print("input: %d DataSeries files, %d rows, %.1f MB, %d fragments of <= ~%d rows; "
          "as Parquet: %d files, %.1f MB; arrowsmith %s%s" % (
              args.files, total, size / 1e6, fragments, args.target_rows, fragments,
              parquet_size / 1e6, arrowsmith.__version__,
              " (debug build)" if getattr(arrowsmith._native, "_debug_build", False) else ""))
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())

    def single():
        return sum(arrowsmith.read(os.path.join(inputs, n)).num_rows for n in names)

    low, median, n = best(args.repeat, single)
    assert n == total
    single_process = (low, median)

    tasks = {}  # reader -> read tasks Ray ran, from the last run's stats

    def ray_read():
        dataset = arrowsmith.ray.read(inputs, target_rows=args.target_rows).materialize()
        tasks["arrowsmith"] = read_tasks(dataset)
        return dataset.count()

    def parquet_read():
        dataset = ray.data.read_parquet(parquet).materialize()
        tasks["parquet"] = read_tasks(dataset)
        return dataset.count()

    reads = {}  # cpus -> (arrowsmith times, Ray's Parquet times)
    jobs = []
    for cpus in cores:
        env = {}
        if args.worker_threads:
            env = {"env_vars": {"RAYON_NUM_THREADS": str(args.worker_threads)}}
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, runtime_env=env)
        ray.data.DataContext.get_current().enable_progress_bars = False
        ray.data.range(4 * cpus, override_num_blocks=2 * cpus).materialize()  # start the workers
        ours, theirs = [], []
        for _ in range(args.repeat):
            # Alternately, so that a change of load touches both alike.
            elapsed, n = timed(ray_read)
            assert n == total, (n, total)
            ours.append(elapsed)
            elapsed, n = timed(parquet_read)
            assert n == total, (n, total)
            theirs.append(elapsed)
        reads[cpus] = (ours, theirs)
        print("num_cpus=%d: read tasks: arrowsmith %s, Ray's Parquet reader %s"
              % (cpus, tasks.get("arrowsmith"), tasks.get("parquet")))
        if cpus == max(cores) and args.jobs:
            jobs = typical_jobs(args, inputs, total, cpus)
        ray.shutdown()

    print("load average after: %.1f %.1f %.1f" % os.getloadavg())
    print()
    print_table(args, cores, total, single_process, reads, jobs)


def typical_jobs(args, inputs, total, cpus):
    import ray

    import arrowsmith.ray

    parquet = os.path.join(args.dir, "parquet")
    jay = os.path.join(args.dir, "jay")

    def to_parquet():
        shutil.rmtree(parquet, ignore_errors=True)
        arrowsmith.ray.read(inputs, target_rows=args.target_rows).write_parquet(parquet)

    def to_jay():
        shutil.rmtree(jay, ignore_errors=True)
        return arrowsmith.ray.write(ray.data.read_parquet(parquet), jay, format="jay")

    rows = []
    low, median, _ = best(args.repeat, to_parquet)
    rows.append(("Ray, num_cpus=%d: DataSeries directory -> Parquet (`write_parquet`)" % cpus,
                 low, median))
    low, median, parts = best(args.repeat, to_jay)
    assert arrowsmith.ray.read(jay).count() == total
    rows.append(("Ray, num_cpus=%d: Parquet -> %d Jay files (`arrowsmith.ray.write`)"
                 % (cpus, len(parts)), low, median))
    return rows


def print_table(args, cores, total, single_process, reads, jobs):
    first = cores[0]
    more = [c for c in cores if c != first]
    threads = ("%d decode thread(s) per worker" % args.worker_threads if args.worker_threads
               else "every core per worker")
    print("Best (median) of %d; %s." % (args.repeat, threads))
    print()
    print("| read | " + " | ".join("`num_cpus=%d`" % c for c in cores)
          + "".join(" | %d → %d workers" % (first, c) for c in more) + " |")
    print("|---" * (1 + len(cores) + len(more)) + "|")
    low, median = single_process
    print("| single process, `arrowsmith.read` file after file | %.2f s (%.2f; %.1f M rows/s) |"
          % (low, median, total / low / 1e6) + " |" * (len(cores) - 1 + len(more)))
    for label, which in (("`arrowsmith.ray.read(dir).materialize()`", 0),
                         ("`ray.data.read_parquet(dir).materialize()`, the same rows", 1)):
        cells = ["%.2f s (%.2f)" % (min(reads[c][which]), statistics.median(reads[c][which]))
                 for c in cores]
        cells += ["%.2f×" % (min(reads[first][which]) / min(reads[c][which])) for c in more]
        print("| %s | %s |" % (label, " | ".join(cells)))
    ratios = ["**%.2f**" % (min(reads[c][0]) / min(reads[c][1])) for c in cores]
    print("| arrowsmith ÷ Ray's Parquet reader (best; goal ≤ 1.0) | %s |"
          % " | ".join(ratios + [""] * len(more)))
    if jobs:
        print()
        print("| job | best of %d | median | rows/s (best) |" % args.repeat)
        print("|---|---|---|---|")
        for name, low, median in jobs:
            print("| %s | %.2f s | %.2f s | %.2f M |" % (name, low, median, total / low / 1e6))


if __name__ == "__main__":
    main()
