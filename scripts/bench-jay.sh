#!/usr/bin/env bash
# Side-by-side Jay benchmark: arrowsmith (benches/jay.rs, Criterion) against datatable 1.1.0
# (benches/jay_datatable.py) and `cat FILE > /dev/null`, on one file written once by datatable.
#
#   scripts/bench-jay.sh                          # 10 000 000 rows (a 208 MB file)
#   ARROWSMITH_BENCH_ROWS=1000000 scripts/bench-jay.sh
#
# Targets (spec B4): Jay -> Arrow >= 10x faster than datatable's fread(...).to_arrow() and within
# 2x of cat (warm); Arrow -> Jay >= 2x faster than to_jay of a fresh frame.
# Scratch files go to $ARROWSMITH_BENCH_DIR (default target/bench-jay); the generated input is
# kept there and reused by later runs.
set -euo pipefail
cd "$(dirname "$0")/.."

rows=${ARROWSMITH_BENCH_ROWS:-10000000}
dir=${ARROWSMITH_BENCH_DIR:-target/bench-jay}
reps=${ARROWSMITH_BENCH_REPS:-5}
target_dir=${CARGO_TARGET_DIR:-target}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
venv=$(scripts/venv.sh)
py=$venv/bin/python

echo "==> building the benchmark (cargo bench profile)"
cargo bench --bench jay --no-run

input=$dir/bench_3col_$rows.jay
if [ ! -f "$input" ]; then
    echo "==> writing $input with datatable"
    "$py" benches/jay_datatable.py --generate --rows "$rows" "$input"
fi

echo "==> arrowsmith (Criterion)"
rm -rf "$target_dir/criterion/jay"
ARROWSMITH_BENCH_JAY=$input ARROWSMITH_BENCH_ROWS=$rows ARROWSMITH_BENCH_DIR=$dir \
    cargo bench --bench jay

echo "==> datatable $("$py" -c 'import datatable; print(datatable.__version__)') and cat"
"$py" benches/jay_datatable.py --reps "$reps" --json "$dir/datatable.json" "$input"

echo
echo "==> side by side"
"$py" - "$target_dir/criterion/jay" "$dir/datatable.json" <<'EOF'
import json, os, platform, statistics, subprocess, sys

crit_dir, dt_json = sys.argv[1], sys.argv[2]
dtr = json.load(open(dt_json))
size = dtr["file_bytes"]


def criterion(name):
    sample = json.load(open(os.path.join(crit_dir, name, "new", "sample.json")))
    per_iter = [t / n / 1e9 for t, n in zip(sample["times"], sample["iters"])]
    return {"best": min(per_iter), "median": statistics.median(per_iter), "runs": per_iter}


ours = {k: criterion(k) for k in ("jay_to_arrow", "arrow_to_jay", "jay_to_parquet")}
theirs = dtr["steps"]

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
mem = subprocess.run(["free", "-h"], capture_output=True, text=True).stdout.splitlines()[1].split()[1]
print("machine: %s, %d cores (nproc), %s RAM, %s; load average now %s"
      % (cpu, os.cpu_count(), mem, platform.platform(), " ".join(open("/proc/loadavg").read().split()[:3])))
print("file: %s, %d rows, %.1f MB; datatable %s with %d threads"
      % (dtr["file"], dtr["rows"], size / 1e6, dtr["datatable"], dtr["nthreads"]))
print("times: best (median) in seconds; MB/s = Jay file bytes / best time")
print()


def cell(r):
    return "%.3f (%.3f)" % (r["best"], r["median"]) if r else "-"


def mbs(r):
    return "%.0f" % (size / 1e6 / r["best"]) if r else ""


table = [
    ("Jay -> Arrow, warm", ours["jay_to_arrow"], "fread(F).to_arrow()", theirs["fread_to_arrow"], theirs["cat"]),
    ("Arrow -> Jay", ours["arrow_to_jay"], "to_jay(), fresh frame", theirs["to_jay_fresh"], None),
    ("Jay -> Parquet (zstd)", ours["jay_to_parquet"], "", None, None),
    ("for context", None, "fread(F)+materialize", theirs["fread_load"], None),
]
head = ("step", "arrowsmith", "MB/s", "datatable does", "datatable", "MB/s", "cat F >/dev/null", "ratios (best)")
lines = [head]
for label, a, what, d, c in table:
    ratios = []
    if a and d:
        ratios.append("datatable/arrowsmith %.1fx" % (d["best"] / a["best"]))
    if a and c:
        ratios.append("arrowsmith/cat %.2fx" % (a["best"] / c["best"]))
    lines.append((label, cell(a), mbs(a), what, cell(d), mbs(d), cell(c), ", ".join(ratios)))
widths = [max(len(l[i]) for l in lines) for i in range(len(head))]
for l in lines:
    print("  ".join(x.ljust(w) for x, w in zip(l, widths)).rstrip())

print()
checks = [
    ("Jay -> Arrow >= 10x faster than fread().to_arrow()",
     lambda k: theirs["fread_to_arrow"][k] / ours["jay_to_arrow"][k], lambda v: v >= 10, "x faster"),
    ("Jay -> Arrow within 2x of cat (warm)",
     lambda k: ours["jay_to_arrow"][k] / theirs["cat"][k], lambda v: v <= 2, "x cat's time"),
    ("Arrow -> Jay >= 2x faster than to_jay of a fresh frame",
     lambda k: theirs["to_jay_fresh"][k] / ours["arrow_to_jay"][k], lambda v: v >= 2, "x faster"),
]
print("targets (spec B4), judged on best times and on medians:")
for label, ratio, ok, unit in checks:
    verdicts = ["%s %s %.2f%s" % (k, "MET" if ok(ratio(k)) else "MISSED", ratio(k), unit) for k in ("best", "median")]
    print("  %-56s %s" % (label, "; ".join(verdicts)))
EOF
