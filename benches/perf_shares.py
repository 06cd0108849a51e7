"""Where a Parquet conversion's CPU goes, from a `perf record --call-graph dwarf` profile: each
sample is put in one bucket by the function that spent it and the functions that called it.

  perf record -F 2999 --call-graph dwarf,16384 -o perf.data -- \\
      target/profiling/arrowsmith convert F.jay out.parquet --no-sync --quiet
  python benches/perf_shares.py perf.data

The `profiling` build (`cargo build --profile profiling --bin arrowsmith -p arrowsmith-cli
--no-default-features`) is the release build with line tables; the release build also works,
as it keeps its symbols. Buckets, first match wins: zstd (everything under parquet's zstd codec:
zstd's functions and the codec's copies and allocations); the legacy reader (the copy out of the legacy layout, Jay
here); statistics (the byte arrays' min/max comparisons, `memcmp`; numeric min/max are inlined
into the encoders and counted there); definition levels; encoding (the rest of parquet and
arrow's writer); the kernel outside them; other.
"""
import collections
import re
import subprocess
import sys

BUCKETS = [
    # Anywhere in the stack: with line tables the top frame can be one of zstd's inlined
    # helpers (MEM_read64, ...).
    ("compression (zstd)", lambda top, stack: re.search(r"ZSTD|HIST_|FSE_|HUF_|zstd", stack)),
    ("the legacy reader (Jay -> Arrow)", lambda top, stack: "jay::" in stack),
    ("statistics (byte arrays' min/max)", lambda top, stack: "memcmp" in top),
    ("definition levels", lambda top, stack: "levels::" in stack),
    ("encoding values into pages", lambda top, stack: re.search(r"parquet::|arrow_writer|Interner", stack)),
    ("kernel", lambda top, stack: top.startswith("[k]")),
]


def bucket(frames):
    top, stack = (frames[0] if frames else "?"), " ".join(frames)
    for name, matches in BUCKETS:
        if matches(top, stack):
            return name
    return "other"


def main():
    script = subprocess.run(["perf", "script", "-i", sys.argv[1], "-F", "comm,tid,ip,sym"],
                            capture_output=True, text=True, check=True).stdout
    counts = collections.Counter()
    for sample in script.split("\n\n"):
        lines = [line.strip() for line in sample.strip().split("\n") if line.strip()]
        frames = []
        for line in lines[1:]:
            ip, _, sym = line.partition(" ")
            frames.append(("[k] " if ip.startswith("ffffffff") else "") + re.sub(r"\s+\(.*\)$", "", sym.strip()))
        if frames:
            counts[bucket(frames)] += 1
    total = sum(counts.values())
    for name, n in counts.most_common():
        print("%5.1f %%  %s" % (100 * n / total, name))
    print("%d samples" % total)


if __name__ == "__main__":
    main()
