#!/usr/bin/env python3
"""Where a binary's bytes go, by crate: sums the sizes of its symbols (`nm -C -S`) by the first
path segment of each demangled name (generic code counts for the crate whose item it is, drop
glue and `core`/`alloc` generics for core/alloc; C and assembly fall under "[C/other]").
Needs the binary with its symbols (the release build before `strip`). docs/performance.md,
"Build and binary".

    scripts/size-by-crate.py target/release/arrowsmith [how many crates, 40]
"""
import collections
import re
import subprocess
import sys

if len(sys.argv) not in (2, 3):
    sys.exit(__doc__)
listing = subprocess.run(["nm", "-C", "-S", sys.argv[1]], capture_output=True, text=True,
                         check=True).stdout
by_crate = collections.Counter()
for line in listing.splitlines():
    fields = line.split(None, 3)
    if len(fields) < 4:
        continue
    name = fields[3].lstrip("<_")
    crate = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    by_crate[crate.group(1) if crate else "[C/other]"] += int(fields[1], 16)
print(f"{sum(by_crate.values()):>12,}  all symbols")
for crate, size in by_crate.most_common(int(sys.argv[2]) if len(sys.argv) == 3 else 40):
    print(f"{size:>12,}  {crate}")
