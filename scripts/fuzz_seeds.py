#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets (fuzz/corpus/<target>/) from the fixtures in
data/, in the input layout each target expects (see fuzz/src/lib.rs). Run from the
repository root; the Arrow IPC and Parquet seeds need the arrowsmith binary (ARROWSMITH, default
target/debug/arrowsmith). Small files only: the committed corpora stay a few hundred KiB."""

import hashlib
import json
import os
import struct
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "data"
CORPUS = ROOT / "fuzz" / "corpus"
MAX_SEED = 32 * 1024
FILO_TYPES = ["Int", "Long", "Double", "Float", "Boolean", "String", "Timestamp", "DateTime", "Binary"]


def put(target, data):
    if len(data) > MAX_SEED:
        return
    out = CORPUS / target
    out.mkdir(parents=True, exist_ok=True)
    (out / hashlib.sha1(data).hexdigest()).write_bytes(data)


def parts(*chunks):
    return b"".join(struct.pack("<H", len(c)) + c for c in chunks)


def main():
    for f in sorted((DATA / "jay").rglob("*.jay")):
        put("jay", f.read_bytes())
    for sub in ["generated", "bigendian"]:
        for f in sorted((DATA / "dataseries" / sub).glob("*.ds")):
            put("dataseries", f.read_bytes())
    for f in sorted((DATA / "vs").glob("*.vs")):
        put("vs", f.read_bytes())
    for line in (DATA / "filo" / "vectors" / "manifest.jsonl").read_text().splitlines():
        entry = json.loads(line)
        vector = (DATA / "filo" / "vectors" / (entry["name"] + ".bin")).read_bytes()
        put("filo_vector", bytes([FILO_TYPES.index(entry["type"])]) + vector)
    s = DATA / "filo" / "set.filo"
    files = [bytes([int(d.name[-1]), int(f.stem)]) + f.read_bytes()
             for d in sorted(s.glob("chunk-*")) for f in sorted(d.glob("*.bin"))]
    put("filo_set", parts((s / "schema.json").read_bytes(), *files))
    for d in sorted((DATA / "bcolz" / "datasets").iterdir()):
        if not (d / "meta").is_dir():
            continue
        chunks = [(d / "data" / f"__{k}.blp") for k in range(3)]
        chunks = [c.read_bytes() for c in chunks if c.exists()]
        attrs = (d / "__attrs__").read_bytes() if (d / "__attrs__").exists() else b"{}"
        if not chunks:
            continue
        while len(chunks) < 3:
            chunks.append(b"")
        put("bcolz", parts((d / "meta" / "storage").read_bytes(),
                           (d / "meta" / "sizes").read_bytes(), *chunks, attrs))
    exe = os.environ.get("ARROWSMITH", str(ROOT / "target" / "debug" / "arrowsmith"))
    tmp = ROOT / "target" / "fuzz-seeds"
    tmp.mkdir(parents=True, exist_ok=True)
    for src in ["jay/all_types.jay", "jay/arrays.jay", "jay/tiny.jay", "vs/f32_r1_d200_snappy.vs",
                "dataseries/generated/packing.ds"]:
        for ext, target in [("arrow", "arrow_ipc"), ("arrows", "arrow_ipc"), ("parquet", "parquet")]:
            out = tmp / (Path(src).stem + "." + ext)
            subprocess.run([exe, "convert", str(DATA / src), str(out)], check=True)
            put(target, out.read_bytes())


if __name__ == "__main__":
    sys.exit(main())
