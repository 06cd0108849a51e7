"""VS <-> Arrow with pyarrow: VS files converted to Arrow IPC keep the `arrow.fixed_shape_tensor`
type (pyarrow recognises the extension and its shape); tensors written by pyarrow (nullable
storage child) convert to VS and back; app_data packed by arrowsmith is byte-identical to
msgpack-python's `packb` of the same JSON (spec 9.3)."""
import json
import pathlib
import random
import struct

import msgpack
import pyarrow as pa
import pytest

import interop

DATA = interop.ROOT / "data" / "vs"
MANIFEST = json.loads((DATA / "manifest.json").read_text())

TENSOR_FIXTURES = [name for name, e in MANIFEST.items()
                   if e["valid"] is True and e["meta"] and e["meta"]["resolution"] < 100]


@pytest.mark.parametrize("name", TENSOR_FIXTURES)
def test_vs_to_ipc_is_a_fixed_shape_tensor_for_pyarrow(tmp_path, name):
    entry = MANIFEST[name]
    out = tmp_path / "t.arrow"
    interop.convert(DATA / name, out)
    table = interop.read_ipc_file(out)
    vec = table.schema.field("vector")
    assert isinstance(vec.type, pa.FixedShapeTensorType), vec.type
    assert list(vec.type.shape) == entry["meta"]["dimensions"]
    assert vec.type.permutation is None and vec.type.dim_names is None
    column = table.column("vector").combine_chunks()
    assert len(column) == len(entry["points"])
    for i, point in enumerate(entry["points"]):
        flat = column.storage[i].values.to_pylist()
        assert flat == point["vector"], (name, i)
    app = table.column("app_data").to_pylist()
    assert [json.loads(a) if a is not None else None for a in app] == [p["app_data"] for p in entry["points"]]


def test_pyarrow_tensors_convert_to_vs_and_back(tmp_path):
    shape = [2, 3, 2]
    r = random.Random(7)
    values = [[r.choice([0.5, -0.0, 1e30, -2.25, 3.0]) for _ in range(12)] for _ in range(5)]
    t = pa.fixed_shape_tensor(pa.float32(), shape)
    assert t.storage_type.value_field.nullable  # pyarrow's child is nullable
    tensor = pa.ExtensionArray.from_storage(t, pa.array(values, t.storage_type))
    app = pa.array([json.dumps({"id": i, "name": "β%d" % i}) for i in range(5)])
    table = pa.table({"vector": tensor, "app_data": app})
    src = tmp_path / "in.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    vs = tmp_path / "t.vs"
    interop.convert(src, vs, "--compression", "gzip")
    back = tmp_path / "back.arrow"
    interop.convert(vs, back)
    got = interop.read_ipc_file(back)
    assert list(got.schema.field("vector").type.shape) == shape
    assert got.column("vector").combine_chunks().storage.to_pylist() == tensor.storage.to_pylist()
    assert [json.loads(a) for a in got.column("app_data").to_pylist()] == [json.loads(a) for a in app.to_pylist()]
    assert got.column("app_data").to_pylist()[1] == '{"id":1,"name":"β1"}'


def test_permuted_tensor_is_refused(tmp_path):
    t = pa.fixed_shape_tensor(pa.int32(), [2, 2], permutation=[1, 0])
    storage = pa.array([[1, 2, 3, 4]], pa.list_(pa.int32(), 4))
    table = pa.table({"vector": pa.ExtensionArray.from_storage(t, storage)})
    src = tmp_path / "p.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    out = tmp_path / "p.vs"
    proc = interop.run("convert", src, out)
    interop.assert_clean_error(proc, out)
    assert "row-major" in proc.stderr


def _points(path):
    """(app_data bytes or None) of every live point, parsed independently of arrowsmith."""
    b = pathlib.Path(path).read_bytes()
    assert b[:4] == b"VS\x00\x00"
    pos, out = 4, []

    def varint(p):
        v = shift = 0
        while True:
            c = b[p]
            v |= (c & 0x7F) << shift
            p += 1
            shift += 7
            if not c & 0x80:
                return v, p

    while b[pos] != ord("$"):
        kind = b[pos]
        (length,) = struct.unpack_from("<I", b, pos + 1)
        if kind == ord("P"):
            n, p = varint(pos + 6)
            out.append(b[p:p + n] if n else None)
        pos += 5 + length
    return out


def _random_json(r, depth=0):
    pick = r.randrange(9 if depth < 3 else 6)
    if pick == 0:
        return None
    if pick == 1:
        return r.random() < 0.5
    if pick == 2:
        return r.choice([0, 1, -1, 127, 128, -32, -33, 255, 256, 65535, 65536, -2**31, 2**32, 2**63 - 1,
                         -2**63, 2**64 - 1])
    if pick == 3:
        return r.choice([0.5, -0.0, 1e300, 0.1, 1.0, 5e-324])
    if pick in (4, 5):
        return "".join(r.choice("abcβ✓𝄞\"\\\n") for _ in range(r.choice([0, 3, 31, 32, 300])))
    if pick in (6, 7):
        return {"k%d%s" % (i, r.choice(["", "é"])): _random_json(r, depth + 1) for i in range(r.randrange(5))}
    return [_random_json(r, depth + 1) for _ in range(r.randrange(20))]


def test_app_data_msgpack_matches_msgpack_python(tmp_path):
    r = random.Random(11)
    docs = [_random_json(r) for _ in range(200)]
    texts = [json.dumps(d, ensure_ascii=False) for d in docs]
    vec = pa.FixedSizeListArray.from_arrays(pa.array(list(range(200)), pa.uint8()), 1)
    table = pa.table({"vector": vec, "app_data": pa.array(texts)})
    src = tmp_path / "m.arrow"
    with pa.OSFile(str(src), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)
    vs = tmp_path / "m.vs"
    interop.convert(src, vs)
    got = _points(vs)
    assert len(got) == len(docs)
    for text, packed in zip(texts, got):
        assert packed == msgpack.packb(json.loads(text)), text
    # And back: the JSON arrowsmith reads is the same value.
    back = tmp_path / "m2.arrow"
    interop.convert(vs, back)
    read = interop.read_ipc_file(back).column("app_data").to_pylist()
    assert [json.loads(t) if t is not None else None for t in read] == [d for d in docs]
