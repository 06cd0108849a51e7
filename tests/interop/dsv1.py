"""An independent DataSeries DSv1 reader, written from shared/specs/dataseries.md alone.

It exists so that the interop tests can check arrowsmith's DataSeries output against a second
implementation that shares no code with the Rust one: every check of the spec is run (header,
trailer, index, adler32, the partly-unpacked lookup2 hash, variable32 entries), and values are
unpacked as §10.2 says, one record at a time, the slow and obvious way.

Supported: both byte orders, both field orderings and pad modes, nullable fields, null
compaction, pack_unique, pack_relative, pack_scale, opt_doublebase, and the compression modes
the Python standard library has (none, zlib, bz2). Any other mode is reported as unsupported.

    f = DSFile(path)
    f.types            -> {name: ExtentType}
    f.read(type_name)  -> {field name: [values...]}   (None for nulls)

Values are what §20.2 maps to Arrow: bool, int, float (stored + opt_doublebase), bytes.
"""
import bz2
import math
import struct
import xml.etree.ElementTree as ET
import zlib

XMLTYPE = "DataSeries: XmlType"
INDEX = "DataSeries: ExtentIndex"
M32 = 0xFFFFFFFF


class DSError(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# checksums (§12)
# ---------------------------------------------------------------------------------------------

def _mix(a, b, c):
    a = ((a - b - c) & M32) ^ (c >> 13)
    b = ((b - c - a) & M32) ^ ((a << 8) & M32)
    c = ((c - a - b) & M32) ^ (b >> 13)
    a = ((a - b - c) & M32) ^ (c >> 12)
    b = ((b - c - a) & M32) ^ ((a << 16) & M32)
    c = ((c - a - b) & M32) ^ (b >> 5)
    a = ((a - b - c) & M32) ^ (c >> 3)
    b = ((b - c - a) & M32) ^ ((a << 10) & M32)
    c = ((c - a - b) & M32) ^ (b >> 15)
    return a, b, c


def lookup2(k, initval):
    """Bob Jenkins' 1996 lookup2 hash, byte-oriented (§12.3)."""
    a = b = 0x9E3779B9
    c = initval & M32
    n = len(k)
    full = n - n % 12
    words = struct.unpack_from("<%dI" % (full // 4), k) if full else ()
    for i in range(0, len(words), 3):
        a = (a + words[i]) & M32
        b = (b + words[i + 1]) & M32
        c = (c + words[i + 2]) & M32
        a, b, c = _mix(a, b, c)
    c = (c + n) & M32
    tail = bytes(k[full:]) + bytes(12 - (n - full))
    a = (a + int.from_bytes(tail[0:4], "little")) & M32
    b = (b + int.from_bytes(tail[4:8], "little")) & M32
    c = (c + (int.from_bytes(tail[8:11], "little") << 8)) & M32
    a, b, c = _mix(a, b, c)
    return c


def _roundup(length):
    return length + ((12 - length % 8) % 8)


# ---------------------------------------------------------------------------------------------
# extent types (§6, §7, §8)
# ---------------------------------------------------------------------------------------------

WIDTH = {"bool": 0, "byte": 1, "int32": 4, "variable32": 4, "int64": 8, "double": 8}


class Field:
    def __init__(self, name, kind, attrs, hidden=False):
        self.name, self.kind, self.attrs, self.hidden = name, kind, attrs, hidden
        self.size = int(attrs["size"]) if kind == "fixedwidth" else WIDTH[kind]
        self.null_field = None   # the hidden bool of a nullable field
        self.offset = None
        self.mask = 0

    def klass(self):
        """Null-compaction class: slot size 1, 4 or 8 (§11)."""
        return {"byte": 1, "fixedwidth": 1, "int32": 4, "variable32": 4}.get(self.kind, 8)


class ExtentType:
    def __init__(self, xml_text):
        # bytes, so that an XML declaration naming an encoding is accepted
        root = ET.fromstring(xml_text.encode() if isinstance(xml_text, str) else xml_text)
        if root.tag != "ExtentType":
            raise DSError("root element is %r, not ExtentType" % root.tag)
        self.xml = xml_text if isinstance(xml_text, str) else xml_text.decode("utf-8")
        self.name = root.get("name")
        self.null_compact = root.get("pack_null_compact", "no") == "non_bool"
        self.pad_original = root.get("pack_pad_record", "original") == "original"
        self.big_to_small = root.get("pack_field_ordering") == "big_to_small_sep_var32"
        self.fields = []
        for el in root:
            if el.tag != "field":
                raise DSError("sub-element should be field, not %r" % el.tag)
            attrs = dict(el.attrib)
            f = Field(attrs.pop("name"), attrs.pop("type"), attrs)
            self.fields.append(f)
            if attrs.get("opt_nullable") == "yes":
                hidden = Field(" " + f.name, "bool", {}, hidden=True)
                f.null_field = hidden
                self.fields.append(hidden)
        self.visible = [f for f in self.fields if not f.hidden]
        by_name = {f.name: f for f in self.fields}
        for f in self.fields:
            rel = f.attrs.get("pack_relative")
            f.relative = None if rel is None else ("self" if rel == f.name else by_name[rel])
            f.scale = float(f.attrs["pack_scale"]) if "pack_scale" in f.attrs else None
            f.doublebase = float(f.attrs["opt_doublebase"]) if "opt_doublebase" in f.attrs else None
            f.unique = f.attrs.get("pack_unique") == "yes"
        self._layout()

    def _layout(self):
        fs = self.fields
        of = lambda *kinds: [f for f in fs if f.kind in kinds]
        n32, nv, n8 = len(of("int32")), len(of("variable32")), len(of("int64", "double"))
        pos = 0

        def bools(start):
            byte, bit = start, 0
            for f in of("bool"):
                f.offset, f.mask = byte, 1 << bit
                bit += 1
                if bit == 8:
                    byte, bit = byte + 1, 0
            return byte + (1 if bit else 0)

        def place(fields, pos):
            for f in fields:
                f.offset = pos
                pos += f.size
            return pos

        def pad(pos, align):
            return (pos + align - 1) // align * align

        if not self.big_to_small:
            pos = bools(0)
            pos = place(of("byte", "fixedwidth"), pos)
            if self.pad_original or n32 or nv:
                pos = pad(pos, 4)
            pos = place(of("int32"), pos)
            pos = place(of("variable32"), pos)
            if self.pad_original or n8:
                pos = pad(pos, 8)
            pos = place(of("int64", "double"), pos)
        else:
            pos = place(of("int64", "double"), pos)
            pos = place(of("int32"), pos)
            pos = place(of("variable32"), pos)
            pos = place(of("byte", "fixedwidth"), pos)
            pos = bools(pos)
            align = 8 if (n8 or self.pad_original) else 4 if (n32 + nv) else 1
            pos = pad(pos, align)
        self.record_size = pos
        self.bool_bytes = 1 + max((f.offset for f in of("bool")), default=-1)


XMLTYPE_T = ExtentType('<ExtentType name="%s"><field type="variable32" name="xmltype" /></ExtentType>' % XMLTYPE)
INDEX_T = ExtentType('<ExtentType name="%s"><field type="int64" name="offset" />'
                     '<field type="variable32" name="extenttype" /></ExtentType>' % INDEX)


# ---------------------------------------------------------------------------------------------
# the file (§2, §3, §4, §5)
# ---------------------------------------------------------------------------------------------

class Extent:
    pass


class DSFile:
    def __init__(self, path):
        with open(path, "rb") as fh:
            self.b = fh.read()
        b = self.b
        if len(b) < 68 or b[:4] != b"DSv1":
            raise DSError("not a DSv1 file")
        if b[4:8] == bytes.fromhex("78563412"):
            self.e = "<"
        elif b[4:8] == bytes.fromhex("12345678"):
            self.e = ">"
        else:
            raise DSError("bad int32 check value")
        i64, pi, inf, nan = struct.unpack_from(self.e + "qddd", b, 8)
        if i64 != 0x123456789ABCDEF0 or abs(pi - 3.1415926535897932384) > 1e-18 or inf != math.inf or nan == nan:
            raise DSError("bad header check values")
        # trailer (§4)
        t0 = len(b) - 28
        if b[t0:t0 + 4] != b"\xff\xff\xff\xff":
            raise DSError("no trailer marker")
        p, notp, _chain, index_off, thash = struct.unpack_from(self.e + "iiIqI", b, t0 + 4)
        if notp != ~p or lookup2(b[t0:t0 + 24], 1776) != thash or index_off != t0 - p:
            raise DSError("bad trailer")
        # sequential scan of every extent, then compare with the index (§5.2, §16.1)
        self.extents = []
        off = 40
        while off < t0:
            x = self._header(off, t0)
            self.extents.append(x)
            off += x.length
        if off != t0:
            raise DSError("the last extent does not end at the trailer")
        if not self.extents or self.extents[0].name != XMLTYPE:
            raise DSError("the first extent is not %s" % XMLTYPE)
        self.types = {}
        for xml in self._decode(self.extents[0], XMLTYPE_T)["xmltype"]:
            t = ExtentType(xml)
            if t.name in self.types:
                raise DSError("type %r declared twice" % t.name)
            self.types[t.name] = t
        for x in self.extents[1:]:
            if x.name == XMLTYPE or (x.name != INDEX and x.name not in self.types):
                raise DSError("extent at %d has undeclared type %r" % (x.offset, x.name))
        last = self.extents[-1]
        if last.name != INDEX or last.offset != index_off:
            raise DSError("the trailer does not point at the index extent")
        index = self._decode(last, INDEX_T)
        listed = list(zip(index["offset"], (n.decode() for n in index["extenttype"])))
        if listed != [(x.offset, x.name) for x in self.extents]:
            raise DSError("the index does not list the extents found")

    def _header(self, off, end):
        x = Extent()
        x.offset = off
        cf, cv, n, vs, adler, h = struct.unpack_from(self.e + "iiiiII", self.b, off)
        mode_f, mode_v, name_len = self.b[off + 24], self.b[off + 25], self.b[off + 26]
        if not (0 <= cf < 512 << 20 and 0 <= cv < 512 << 20 and n >= 0 and vs >= 4 and name_len > 0):
            raise DSError("bad extent header at %d" % off)
        x.name = self.b[off + 28:off + 28 + name_len].decode("utf-8")
        r4 = lambda v: (v + 3) // 4 * 4
        hl = r4(28 + name_len)
        x.cf, x.cv, x.rows, x.vs, x.adler, x.hash = cf, cv, n, vs, adler, h
        x.modes = (mode_f, mode_v)
        x.fixed_at, x.var_at = off + hl, off + hl + r4(cf)
        x.length = hl + r4(cf) + r4(cv)
        if off + x.length > end:
            raise DSError("extent at %d runs past the trailer" % off)
        return x

    @staticmethod
    def _inflate(mode, data, expected, exact):
        if expected == 0:
            if data:
                raise DSError("an empty part holds %d bytes" % len(data))
            return b""  # the mode byte of an empty part is garbage (§13.1)
        if mode == 0:
            out = bytes(data)
        elif mode == 2:
            out = zlib.decompress(data)
        elif mode == 3:
            out = bz2.decompress(data)
        else:
            raise NotImplementedError("compression mode %d is not in the Python standard library" % mode)
        if len(out) > expected or (exact and len(out) != expected):
            raise DSError("a part decompressed to %d bytes, expected %d" % (len(out), expected))
        return out

    def _decode(self, x, t):
        """Every visible field of extent `x` as a list of values (§10.2)."""
        b, e, rs, n = self.b, self.e, t.record_size, x.rows
        stored = b[x.offset:x.offset + x.length]
        if zlib.adler32(stored[20:], zlib.adler32(stored[:16])) != x.adler:
            raise DSError("adler32 mismatch in the extent at %d" % x.offset)
        fixed = self._inflate(x.modes[0], b[x.fixed_at:x.fixed_at + x.cf], n * rs, not t.null_compact)
        if t.null_compact:
            fixed = _uncompact(t, fixed, n)
        var = b"\0\0\0\0" + self._inflate(x.modes[1], b[x.var_at:x.var_at + x.cv], x.vs - 4, True)
        # the partly unpacked hash, walking the variable entries (§12.2, §9.1)
        h = lookup2(var, lookup2(fixed, 1972))
        words, at, starts = [], 4, set()
        while at < len(var):
            (length,) = struct.unpack_from(e + "i", var, at)
            if length < 0 or at + 4 + _roundup(length) > len(var):
                raise DSError("bad variable entry at %d" % at)
            if any(var[at + 4 + length:at + 4 + _roundup(length)]):
                raise DSError("non-zero padding after the variable entry at %d" % at)
            starts.add(at)
            words.append(var[at:at + 4])
            if len(words) == 1024:
                h = lookup2(b"".join(words), h)
                words = []
            at += 4 + _roundup(length)
        if lookup2(b"".join(words), h) != x.hash:
            raise DSError("hash mismatch in the extent at %d" % x.offset)

        recs = [fixed[r * rs:(r + 1) * rs] for r in range(n)]
        null = {f.name: [bool(rec[f.null_field.offset] & f.null_field.mask) if f.null_field else False
                         for rec in recs] for f in t.visible}
        raw = {}
        for f in t.fields:
            if f.kind in ("int32", "int64", "double", "variable32"):
                code = e + {"int32": "i", "variable32": "i", "int64": "q", "double": "d"}[f.kind]
                raw[f.name] = [struct.unpack_from(code, rec, f.offset)[0] for rec in recs]
        skip = lambda f, r: t.null_compact and null[f.name][r]
        # 1. pack_scale, 2. self-relative, 3. other-relative (§10.2)
        for f in t.fields:
            if f.scale is not None:
                raw[f.name] = [v * f.scale for v in raw[f.name]]
        for f in t.fields:
            if f.relative == "self":
                prev, vals = 0, raw[f.name]
                for r in range(n):
                    if skip(f, r):
                        continue
                    v = vals[r] + prev
                    if f.kind == "double":
                        v = _c_round(v * (1.0 / f.scale)) * f.scale
                    else:
                        v = _wrap(v, f.kind)
                    vals[r] = prev = v
        for f in t.fields:
            if isinstance(f.relative, Field):
                vals, base = raw[f.name], raw[f.relative.name]
                for r in range(n):
                    if not skip(f, r):
                        vals[r] = vals[r] + base[r] if f.kind == "double" else _wrap(vals[r] + base[r], f.kind)

        out = {}
        for f in t.visible:
            if f.kind == "bool":
                vals = [bool(rec[f.offset] & f.mask) for rec in recs]
            elif f.kind == "byte":
                vals = [rec[f.offset] for rec in recs]
            elif f.kind == "fixedwidth":
                vals = [bytes(rec[f.offset:f.offset + f.size]) for rec in recs]
            elif f.kind == "variable32":
                vals = []
                for slot in raw[f.name]:
                    if slot == 0:
                        vals.append(b"")
                        continue
                    if slot not in starts:
                        raise DSError("variable32 offset %d of %r is not an entry" % (slot, f.name))
                    (length,) = struct.unpack_from(e + "i", var, slot)
                    vals.append(bytes(var[slot + 4:slot + 4 + length]))
            elif f.kind == "double" and f.doublebase is not None:
                vals = [v + f.doublebase for v in raw[f.name]]
            else:
                vals = raw[f.name]
            out[f.name] = [None if null[f.name][r] else v for r, v in enumerate(vals)]
        return out

    def read(self, type_name):
        """Every extent of `type_name` in file order, concatenated: {field: [values]}."""
        t = self.types[type_name]
        out = {f.name: [] for f in t.visible}
        for x in self.extents:
            if x.name == type_name:
                for k, v in self._decode(x, t).items():
                    out[k].extend(v)
        return out

    def extents_of(self, type_name):
        return [x for x in self.extents if x.name == type_name]


def _wrap(v, kind):
    bits = 32 if kind == "int32" else 64
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _c_round(v):
    """C round(): halfway cases away from zero (v - trunc(v) is exact, so no double rounding)."""
    r = math.trunc(v)
    return r + math.copysign(1.0, v) if abs(v - r) >= 0.5 else float(r)


def _uncompact(t, data, n):
    """Reverses null compaction (§11)."""
    rs, out, cur = t.record_size, bytearray(n * t.record_size), 0
    order = sorted((f for f in t.fields if f.kind != "bool"), key=lambda f: (f.klass(), f.offset))
    for r in range(n):
        base = r * rs
        if cur + t.bool_bytes > len(data):
            raise DSError("compacted data ends inside a record")
        out[base:base + t.bool_bytes] = data[cur:cur + t.bool_bytes]
        cur += t.bool_bytes
        for f in order:
            nf = f.null_field
            if nf is not None and out[base + nf.offset] & nf.mask:
                continue
            k = f.klass()
            cur = (cur + k - 1) // k * k
            if cur + f.size > len(data):
                raise DSError("compacted data ends inside a record")
            out[base + f.offset:base + f.offset + f.size] = data[cur:cur + f.size]
            cur += f.size
    if cur != len(data):
        raise DSError("compacted data has %d bytes left over" % (len(data) - cur))
    return bytes(out)
