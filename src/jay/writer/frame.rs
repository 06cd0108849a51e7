//! The FlatBuffers meta record of a written file (spec A3, B3.2): old-layout tables for
//! top-level non-array columns, new-layout tables for arrays and their children.

use flatbuffers::{FlatBufferBuilder, UnionWIPOffset, WIPOffset};

use super::encode::StatsValue;
use crate::jay::gen::jay as fb;
use crate::jay::mapping::{JayType, WriteMapping};
use crate::jay::meta::BufferRange;

/// A column whose buffers have been written: where they are and what the meta says of it.
#[derive(Debug)]
pub(crate) struct Placed {
    pub jay_type: JayType,
    pub nrows: u64,
    pub nullcount: u64,
    pub stats: Option<StatsValue>,
    /// Arrays: the validity bitmap (`{0, 0}` when no list is null).
    pub validity: BufferRange,
    /// Values; offsets and bytes; array offsets; nothing for Void0.
    pub data: Vec<BufferRange>,
    pub child: Option<Box<Placed>>,
}

/// A generous bound on the meta bytes one column of this mapping takes (tables, vtables, type
/// tables, buffer structs, stats, alignment), name excluded.
pub(crate) fn mapping_meta_bound(mapping: &WriteMapping) -> u64 {
    match mapping {
        WriteMapping::List { element, .. } => 256 + mapping_meta_bound(element),
        _ => 192,
    }
}

/// Serialises the meta record, zero-padded to a multiple of 8 bytes.
pub(crate) fn build(columns: &[(&str, Placed)], nrows: u64, nkeys: i32) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::with_capacity(256 + columns.len() * 160);
    let tables: Vec<_> = columns
        .iter()
        .map(|(name, col)| column(&mut fbb, col, Some(name)))
        .collect();
    let tables = fbb.create_vector(&tables);
    let frame = fb::Frame::create(
        &mut fbb,
        &fb::FrameArgs {
            nrows,
            ncols: columns.len() as u64,
            nkeys,
            columns: Some(tables),
        },
    );
    fbb.finish_minimal(frame);
    let mut meta = fbb.finished_data().to_vec();
    meta.resize(meta.len().next_multiple_of(8), 0);
    meta
}

fn buffer(b: &BufferRange) -> fb::Buffer {
    if b.length == 0 {
        fb::Buffer::new(0, 0)
    } else {
        fb::Buffer::new(b.offset, b.length)
    }
}

/// Pushes the stats struct out of line (before its table, so that the table's forward offset
/// reaches it) and returns its union tag and offset.
fn push_stats(
    fbb: &mut FlatBufferBuilder<'_>,
    stats: StatsValue,
) -> (u8, WIPOffset<UnionWIPOffset>) {
    let (tag, at) = match stats {
        StatsValue::Bool(lo, hi) => (1, fbb.push(fb::StatsBool::new(lo, hi)).value()),
        StatsValue::Int8(lo, hi) => (2, fbb.push(fb::StatsInt8::new(lo, hi)).value()),
        StatsValue::Int16(lo, hi) => (3, fbb.push(fb::StatsInt16::new(lo, hi)).value()),
        StatsValue::Int32(lo, hi) => (4, fbb.push(fb::StatsInt32::new(lo, hi)).value()),
        StatsValue::Int64(lo, hi) => (5, fbb.push(fb::StatsInt64::new(lo, hi)).value()),
        StatsValue::Float32(lo, hi) => (6, fbb.push(fb::StatsFloat32::new(lo, hi)).value()),
        StatsValue::Float64(lo, hi) => (7, fbb.push(fb::StatsFloat64::new(lo, hi)).value()),
    };
    (tag, WIPOffset::new(at))
}

fn type_table<'a>(fbb: &mut FlatBufferBuilder<'a>, t: &JayType) -> WIPOffset<fb::Type<'a>> {
    let extra = match t {
        JayType::Arr32(e) | JayType::Arr64(e) => Some(type_table(fbb, e).as_union_value()),
        _ => None,
    };
    fb::Type::create(
        fbb,
        &fb::TypeArgs {
            stype: fb::SType(t.code()),
            extra_type: if extra.is_some() {
                fb::TypeExtra::child
            } else {
                fb::TypeExtra::NONE
            },
            extra,
        },
    )
}

/// A column table: old layout for a top-level non-array column, new layout otherwise.
fn column<'a>(
    fbb: &mut FlatBufferBuilder<'a>,
    col: &Placed,
    name: Option<&str>,
) -> WIPOffset<fb::Column<'a>> {
    use fb::Column as C;
    match name {
        Some(name) if !col.jay_type.is_array() => {
            let name = fbb.create_string(name);
            let stats = col.stats.map(|s| push_stats(fbb, s));
            let start = fbb.start_table();
            if let Some(data) = col.data.first() {
                fbb.push_slot_always(C::VT_DATA, buffer(data));
            }
            if let Some(strdata) = col.data.get(1) {
                fbb.push_slot_always(C::VT_STRDATA, buffer(strdata));
            }
            fbb.push_slot::<u64>(C::VT_NULLCOUNT, col.nullcount, 0);
            if let Some((tag, at)) = stats {
                fbb.push_slot_always(C::VT_STATS, at);
                fbb.push_slot::<u8>(C::VT_STATS_TYPE, tag, 0);
            }
            fbb.push_slot_always(C::VT_NAME, name);
            fbb.push_slot::<u8>(C::VT_STYPE, col.jay_type.code(), 0);
            WIPOffset::new(fbb.end_table(start).value())
        }
        _ => {
            let children = col.child.as_ref().map(|child| {
                let child = column(fbb, child, None);
                fbb.create_vector(&[child])
            });
            let type_ = type_table(fbb, &col.jay_type);
            let buffers = (col.jay_type != JayType::Void0).then(|| {
                let list: Vec<fb::Buffer> = std::iter::once(&col.validity)
                    .chain(&col.data)
                    .map(buffer)
                    .collect();
                fbb.create_vector(&list)
            });
            let name = name.map(|n| fbb.create_string(n));
            let start = fbb.start_table();
            fbb.push_slot::<u64>(C::VT_NROWS, col.nrows, 0);
            fbb.push_slot::<u64>(C::VT_NULLCOUNT, col.nullcount, 0);
            if let Some(buffers) = buffers {
                fbb.push_slot_always(C::VT_BUFFERS, buffers);
            }
            if let Some(children) = children {
                fbb.push_slot_always(C::VT_CHILDREN, children);
            }
            fbb.push_slot_always(C::VT_TYPE_, type_);
            if let Some(name) = name {
                fbb.push_slot_always(C::VT_NAME, name);
            }
            WIPOffset::new(fbb.end_table(start).value())
        }
    }
}
