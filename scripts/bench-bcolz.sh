#!/usr/bin/env bash
# Side-by-side bcolz benchmark: arrowsmith (benches/bcolz.rs, Criterion) against bcolz-zipline
# itself (benches/bcolz_reference.py), on one 3-column ctable written once by bcolz.
#
#   scripts/bench-bcolz.sh                          # 10 000 000 rows (260 MB raw)
#   ARROWSMITH_BENCH_ROWS=1000000 scripts/bench-bcolz.sh
#
# Targets (issue 3): bcolz -> Arrow >= 2x bcolz's read to numpy; Arrow -> bcolz >= 1.5x bcolz's
# write from numpy; both with every core busy. The default arrowsmith write is durable (fsync
# before the rename); bcolz syncs nothing, so the write without sync is timed too. Scratch files go to $ARROWSMITH_BENCH_DIR
# (default target/bench-bcolz); the generated input is kept and reused. The Python with bcolz is
# $ARROWSMITH_PYTHON, else target/venv's (scripts/venv.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${ARROWSMITH_BENCH_ROWS:-10000000}
dir=${ARROWSMITH_BENCH_DIR:-target/bench-bcolz}
reps=${ARROWSMITH_BENCH_REPS:-5}
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
py=${ARROWSMITH_PYTHON:-$(scripts/venv.sh)/bin/python}

echo "==> building the benchmark (cargo bench profile)"
cargo bench --bench bcolz --no-run

input=$dir/bench_3col_$rows.bcolz
if [ ! -d "$input" ]; then
    echo "==> writing $input with bcolz"
    "$py" benches/bcolz_reference.py --generate --rows "$rows" "$input"
fi

# Both sides write ~90 MB per iteration; dirty pages left by one side would be written back
# during the other's timings (and a durable write's fsyncs commit the file system's journal),
# so each side starts with nothing dirty.
echo "==> arrowsmith (Criterion)"
rm -rf "$target_dir/criterion/bcolz"
sync
ARROWSMITH_BENCH_BCOLZ=$input ARROWSMITH_BENCH_ROWS=$rows ARROWSMITH_BENCH_DIR=$dir \
    cargo bench --bench bcolz

echo "==> bcolz $("$py" -c 'import bcolz; print(bcolz.__version__)')"
sync
"$py" benches/bcolz_reference.py --reps "$reps" --json "$dir/bcolz.json" "$input"

echo
echo "==> side by side"
"$py" - "$target_dir/criterion/bcolz" "$dir/bcolz.json" "$input" <<'PY'
import json, os, platform, statistics, subprocess, sys

crit_dir, ref_json, input_dir = sys.argv[1:4]
ref = json.load(open(ref_json))
raw = ref["raw_bytes"]
disk = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(input_dir) for f in fs)


def criterion(name):
    sample = json.load(open(os.path.join(crit_dir, name, "new", "sample.json")))
    per_iter = [t / n / 1e9 for t, n in zip(sample["times"], sample["iters"])]
    return {"best": min(per_iter), "median": statistics.median(per_iter)}


names = ("bcolz_to_arrow", "bcolz_to_arrow_no_read_ahead", "arrow_to_bcolz", "arrow_to_bcolz_nosync")
ours = {k: criterion(k) for k in names if os.path.exists(os.path.join(crit_dir, k, "new", "sample.json"))}
theirs = ref["steps"]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
print("machine: %s, %d cores, %s; load average now %s"
      % (cpu, os.cpu_count(), platform.platform(), " ".join(open("/proc/loadavg").read().split()[:3])))
print("data: %d rows, %.1f MB raw, %.1f MB on disk (lz4, clevel 5, shuffle); bcolz %s"
      % (ref["rows"], raw / 1e6, disk / 1e6, ref["bcolz"]))
print("times: best (median) seconds; MB/s = raw bytes / best time")
print()
rows = [("bcolz -> Arrow / numpy", "bcolz_to_arrow", "read_to_numpy", 2.0),
        ("  (no read-ahead)", "bcolz_to_arrow_no_read_ahead", "read_to_numpy", None),
        ("Arrow / numpy -> bcolz", "arrow_to_bcolz", "write_from_numpy", 1.5),
        ("  (no fsync, like bcolz)", "arrow_to_bcolz_nosync", "write_from_numpy", 1.5)]
for label, mine, ref_step, target in rows:
    if mine not in ours:
        continue
    a, b = ours[mine], theirs[ref_step]
    ratio_best = b["best"] / a["best"]
    ratio_median = b["median"] / a["median"]
    verdict = "" if target is None else "  (target %.1fx: %s)" % (target, "MET" if ratio_best >= target else "MISSED")
    print("%-26s arrowsmith %.3f (%.3f) %5.0f MB/s   bcolz %.3f (%.3f) %5.0f MB/s   speed-up %.2fx best, %.2fx median%s"
          % (label, a["best"], a["median"], raw / 1e6 / a["best"], b["best"], b["median"], raw / 1e6 / b["best"],
             ratio_best, ratio_median, verdict))
PY
