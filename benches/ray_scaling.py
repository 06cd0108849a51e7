"""Reading a directory of multi-extent DataSeries files with arrowsmith.ray on 1 and on 2 Ray
workers (a local cluster with num_cpus=1, then num_cpus=2), beside a single-process
`arrowsmith.read` of the same files; with --jobs, also the two typical jobs of
docs/distributed.md (DataSeries directory -> Parquet, Parquet -> a directory of Jay files).

    target/venv/bin/python benches/ray_scaling.py                 # 4 files x 500,000 rows
    target/venv/bin/python benches/ray_scaling.py --files 8 --rows 1000000 --jobs
    target/venv/bin/python benches/ray_scaling.py --worker-threads 1   # one decode thread per worker

The input is written once into --dir (default target/bench-ray/) and reused. Each timing is
the best of --repeat runs, after a warm-up job that starts the cluster's workers. Prints a
Markdown table (docs/performance.md, "Ray Data"). Needs ray[data] and pyarrow in the venv.
"""
import argparse
import os
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


def best(repeat, run):
    times = []
    result = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = run()
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times), result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(ROOT, "target", "bench-ray"))
    parser.add_argument("--files", type=int, default=4)
    parser.add_argument("--rows", type=int, default=500_000, help="rows per file")
    parser.add_argument("--extent-size", type=int, default=1 << 20, help="DataSeries extent bytes")
    parser.add_argument("--target-rows", type=int, default=125_000, help="rows per fragment")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", action="store_true", help="also time the typical jobs")
    parser.add_argument("--worker-threads", type=int,
                        help="decode threads per Ray worker (RAYON_NUM_THREADS in the workers); "
                             "default: the reader's own choice, every core")
    args = parser.parse_args()

    import ray

    import arrowsmith.ray

    inputs = os.path.join(args.dir, "traces-%dx%d" % (args.files, args.rows))
    generate(inputs, args.files, args.rows, args.extent_size)
    names = sorted(os.listdir(inputs))
    size = sum(os.path.getsize(os.path.join(inputs, n)) for n in names)
    fragments = sum(len(arrowsmith.fragments(os.path.join(inputs, n), target_rows=args.target_rows))
                    for n in names)
    total = args.files * args.rows
    print("input: %d DataSeries files, %d rows, %.1f MB, %d fragments of <= ~%d rows; "
          "arrowsmith %s%s" % (args.files, total, size / 1e6, fragments, args.target_rows,
                              arrowsmith.__version__,
                              " (debug build)" if getattr(arrowsmith._native, "_debug_build", False) else ""))
    print("load average before: %.1f %.1f %.1f" % os.getloadavg())

    rows = []

    def single():
        return sum(arrowsmith.read(os.path.join(inputs, n)).num_rows for n in names)

    low, median, n = best(args.repeat, single)
    assert n == total
    rows.append(("single process, `arrowsmith.read` file after file", low, median))

    def ray_read():
        dataset = arrowsmith.ray.read(inputs, target_rows=args.target_rows).materialize()
        return dataset.count()

    for cpus in (1, 2):
        env = {}
        if args.worker_threads:
            env = {"env_vars": {"RAYON_NUM_THREADS": str(args.worker_threads)}}
        ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, runtime_env=env)
        ray.data.DataContext.get_current().enable_progress_bars = False
        ray.data.range(4 * cpus, override_num_blocks=2 * cpus).materialize()  # start the workers
        low, median, n = best(args.repeat, ray_read)
        assert n == total
        threads = " (%d decode thread(s) per worker)" % args.worker_threads if args.worker_threads else ""
        rows.append(("Ray, num_cpus=%d%s: `arrowsmith.ray.read(dir).materialize()`" % (cpus, threads),
                     low, median))
        if cpus == 2 and args.jobs:
            parquet = os.path.join(args.dir, "parquet")
            jay = os.path.join(args.dir, "jay")

            def to_parquet():
                shutil.rmtree(parquet, ignore_errors=True)
                arrowsmith.ray.read(inputs, target_rows=args.target_rows).write_parquet(parquet)

            def to_jay():
                shutil.rmtree(jay, ignore_errors=True)
                return arrowsmith.ray.write(ray.data.read_parquet(parquet), jay, format="jay")

            low, median, _ = best(args.repeat, to_parquet)
            rows.append(("Ray, num_cpus=2: DataSeries directory -> Parquet (`write_parquet`)", low, median))
            low, median, parts = best(args.repeat, to_jay)
            assert arrowsmith.ray.read(jay).count() == total
            rows.append(("Ray, num_cpus=2: Parquet -> %d Jay files (`arrowsmith.ray.write`)" % len(parts),
                         low, median))
        ray.shutdown()

    print("load average after: %.1f %.1f %.1f" % os.getloadavg())
    print()
    print("| job | best of %d | median | rows/s (best) |" % args.repeat)
    print("|---|---|---|---|")
    for name, low, median in rows:
        print("| %s | %.2f s | %.2f s | %.2f M |" % (name, low, median, total / low / 1e6))


if __name__ == "__main__":
    main()
