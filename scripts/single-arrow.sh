#!/usr/bin/env bash
# Fails when Cargo.lock holds more than one major of an Arrow crate (or of parquet, datafusion,
# pyo3): the workspace must build on the one arrow its DataFusion uses, or DataFusion's
# RecordBatch is not ours.
set -euo pipefail
cd "$(dirname "$0")/.."

dupes=$(cargo tree --workspace --all-features --target all -d --depth 0 -e normal,build --prefix none \
    --format '{p}' 2>/dev/null |
    grep -E '^(arrow|arrow-[a-z-]+|parquet|datafusion|datafusion-[a-z-]+|pyo3|pyo3-[a-z-]+) v' |
    awk '{print $1, $2}' | sort -u || true)
if [ -n "$dupes" ]; then
    echo "error: more than one version of an Arrow-family crate in the workspace:" >&2
    echo "$dupes" >&2
    exit 1
fi
echo "one version of each Arrow-family crate: $(cargo tree --workspace -e normal --prefix none --format '{p}' 2>/dev/null | grep -E '^arrow v' | sort -u | head -1)"
