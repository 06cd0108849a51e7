"""End to end, as users run it: `arrowsmith convert F out.arrow` against `cp F out` of the same
Jay file (issue 14: the conversion within 1.3x of cp), warm, each output deleted before each run.
cp does not flush its output to disk and arrowsmith does by default, so the like-for-like pairs
are `convert --no-sync` against `cp`, and the default (durable) `convert` against `cp` followed
by `sync` of the copy.

    python benches/convert_vs_cp.py --bin target/release/arrowsmith FILE.jay [--reps 5]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time


def timed(argv, out, reps):
    runs = []
    for i in range(reps + 1):
        if os.path.exists(out):
            os.remove(out)
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
        elapsed = time.perf_counter() - start
        if i:  # the first run warms the cache and is not counted
            runs.append(elapsed)
    size = os.path.getsize(out)
    os.remove(out)
    return min(runs), statistics.median(runs), size


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin", required=True)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("input")
    a = p.parse_args()
    scratch = os.path.dirname(os.path.abspath(a.input))
    arrow_out = os.path.join(scratch, "convert_vs_cp.arrow")
    cp_out = os.path.join(scratch, "convert_vs_cp.copy")
    cp = shutil.which("cp")
    load = " ".join(open("/proc/loadavg").read().split()[:3])
    steps = [
        ("cp F out", [cp, a.input, cp_out], cp_out),
        ("arrowsmith convert F out.arrow --no-sync", [a.bin, "convert", a.input, arrow_out, "--no-sync"], arrow_out),
        ("cp F out && sync out", ["sh", "-c", 'cp "$1" "$2" && sync "$2"', "sh", a.input, cp_out], cp_out),
        ("arrowsmith convert F out.arrow (durable, the default)", [a.bin, "convert", a.input, arrow_out], arrow_out),
        ("arrowsmith convert F out.arrow, 1 thread", ["env", "RAYON_NUM_THREADS=1", a.bin, "convert", a.input, arrow_out], arrow_out),
    ]
    results = [(label, *timed(argv, out, a.reps)) for label, argv, out in steps]
    print("file: %s (%.1f MB); load average %s at the start, %s at the end; best (median) of %d, seconds"
          % (a.input, os.path.getsize(a.input) / 1e6, load,
             " ".join(open("/proc/loadavg").read().split()[:3]), a.reps))
    print()
    print("| step | time | output | × cp (best) | × cp && sync (best) |")
    print("|---|---|---|---|---|")
    floor, synced = results[0][1], results[2][1]
    for label, best, median, size in results:
        print("| %s | %.3f (%.3f) | %.1f MB | %.2f | %.2f |"
              % (label, best, median, size / 1e6, best / floor, best / synced))
    ratio = results[1][1] / floor
    durable = results[3][1] / synced
    print()
    print("goal (issue 14): convert to .arrow within 1.3x of cp, like for like: %s "
          "(--no-sync vs cp %.2fx; durable vs cp && sync %.2fx)"
          % ("MET" if max(ratio, durable) <= 1.3 else "MISSED", ratio, durable))


if __name__ == "__main__":
    main()
