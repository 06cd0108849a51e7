//! Damaged Filo vectors fail with clear errors (never a panic), and Arrow → Filo → Arrow round
//! trips hold for every element type, NA pattern, encoding and width.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, StringBuilder};
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BinaryArray, PrimitiveArray, StructArray};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};
use arrowsmith::filo::{self, mapping, EncodeOptions, FiloType, Hint, WireType};
use arrowsmith::ErrorClass;
use proptest::prelude::*;

fn fixture(name: &str) -> Vec<u8> {
    let dir: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/filo/vectors");
    std::fs::read(dir.join(format!("{name}.bin"))).unwrap()
}

fn class_of(bytes: &[u8], t: &DataType) -> ErrorClass {
    filo::decode(bytes, t).unwrap_err().class()
}

/// One fixture per wire type. (`string_all_empty_const` is left out: a damaged length byte
/// makes a legal 16M-element ConstString, which takes seconds to expand in a debug build.)
const MUTATED: [&str; 8] = [
    "int_i8_with_na",
    "int_const_with_na",
    "int_diff_u8",
    "bool_with_na",
    "string_simple_with_na",
    "string_dict",
    "datetime_mixed_tz",
    "long_i64",
];

#[test]
fn truncated_and_mutated_vectors_never_panic() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/filo/vectors");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "bin") {
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        for cut in 0..bytes.len() {
            filo::fuzz_decode(&bytes[..cut]);
        }
        // One vector per wire type: every byte set to a few hostile values.
        let stem = path.file_stem().unwrap().to_str().unwrap();
        if !MUTATED.contains(&stem) {
            continue;
        }
        for i in 0..bytes.len() {
            for v in [0x00, 0x01, 0x7F, 0x80, 0xFF] {
                let mut damaged = bytes.clone();
                damaged[i] = v;
                let t0 = std::time::Instant::now();
                filo::fuzz_decode(&damaged);
                if t0.elapsed().as_millis() > 50 {
                    eprintln!("SLOW {stem} {i} {v}: {:?}", t0.elapsed());
                }
            }
        }
    }
}

#[test]
fn truncated_vectors_are_errors() {
    let bytes = fixture("int_i8_with_na");
    assert_eq!(
        class_of(&bytes[..3], &DataType::Int32),
        ErrorClass::TooSmall
    );
    for cut in [4, 8, 20, 40, 70, 83] {
        let e = filo::decode(&bytes[..cut], &DataType::Int32).unwrap_err();
        assert!(
            e.offset().is_some() || e.field().is_some(),
            "cut {cut}: {e}"
        );
    }
}

#[test]
fn unknown_wire_type() {
    let mut bytes = fixture("int_i8");
    bytes[0] = 0x09;
    assert_eq!(class_of(&bytes, &DataType::Int32), ErrorClass::UnknownType);
    bytes[0] = 0x02;
    bytes[1] = 0x07;
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::UnknownType);
    assert!(e.to_string().contains("0x00000702"), "{e}");
}

#[test]
fn root_and_vtable_offsets_out_of_range() {
    let mut bytes = fixture("int_i8_with_na");
    bytes[4..8].copy_from_slice(&0x1000u32.to_le_bytes());
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BufferOutOfBounds, "{e}");
    assert!(e.offset().is_some(), "{e}");

    let mut bytes = fixture("int_i8_with_na");
    // The root table's soffset (file 0x14) → a vtable far before the buffer.
    bytes[0x14..0x18].copy_from_slice(&0x7000i32.to_le_bytes());
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BufferOutOfBounds, "{e}");
}

#[test]
fn data_shorter_than_len_times_width() {
    let mut bytes = fixture("int_i8_with_na");
    // len (file 0x20) from 5 to 9: 9 bytes needed, 5 present.
    bytes[0x20] = 9;
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BufferSize, "{e}");
    assert!(e.to_string().contains("need 9 bytes"), "{e}");
    assert_eq!(e.offset(), Some(0x2c));
}

#[test]
fn nbits_outside_the_widths() {
    let mut bytes = fixture("int_i8_with_na");
    bytes[0x18] = 12; // info.nbits
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BadMeta, "{e}");
    assert!(e.to_string().contains("nbits 12"), "{e}");
    // 64 bits is a Boolean bitmap or a Long, never an Int.
    bytes[0x18] = 64;
    assert_eq!(class_of(&bytes, &DataType::Int32), ErrorClass::BadMeta);
    // A Boolean must be the u64 bitmap.
    let mut bytes = fixture("int_i8_with_na");
    bytes[0x18] = 8;
    assert_eq!(class_of(&bytes, &DataType::Boolean), ErrorClass::BadMeta);
}

#[test]
fn dictionary_code_out_of_range() {
    let mut bytes = fixture("string_dict");
    // codes [2, 0, 1] at file 0x5c; the dictionary has 3 entries.
    assert_eq!(&bytes[0x5c..0x5f], &[2, 0, 1]);
    bytes[0x5c] = 3;
    let e = filo::decode(&bytes, &DataType::Utf8).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BadValue, "{e}");
    assert!(e.to_string().contains("code 3"), "{e}");
    bytes[0x5c] = 0xFF; // -1 as a signed code
    assert_eq!(class_of(&bytes, &DataType::Utf8), ErrorClass::BadValue);
}

#[test]
fn mask_type_outside_the_enum() {
    let mut bytes = fixture("int_i8_with_na");
    bytes[0x47] = 3;
    let e = filo::decode(&bytes, &DataType::Int32).unwrap_err();
    assert_eq!(e.class(), ErrorClass::BadValue, "{e}");
}

// ---- round trips -------------------------------------------------------------------------

const HINTS: [Hint; 4] = [
    Hint::AutoDetect,
    Hint::SimpleEncoding,
    Hint::DictionaryEncoding,
    Hint::DiffEncoding,
];

fn check_round_trip(input: &ArrayRef, t: FiloType, hint: Hint) -> Vec<u8> {
    let bytes = filo::encode(input.as_ref(), t, &EncodeOptions::default().with_hint(hint))
        .unwrap_or_else(|e| panic!("{t} {hint:?}: {e}"));
    let back = filo::decode(&bytes, &t.arrow_type()).unwrap();
    assert_eq!(back.len(), input.len());
    for i in 0..input.len() {
        assert_eq!(back.is_null(i), input.is_null(i), "{t} {hint:?}: NA at {i}");
    }
    // Values under NA are unspecified: compare with NAs zeroed out on both sides.
    let strip = |a: &ArrayRef| -> ArrayRef {
        let mask = arrow_array::BooleanArray::from(
            (0..a.len()).map(|i| a.is_valid(i)).collect::<Vec<_>>(),
        );
        arrow::compute::filter(a, &mask).unwrap()
    };
    let (a, b) = (strip(input), strip(&back));
    match t {
        FiloType::Double | FiloType::Float => {
            let bits = |x: &ArrayRef| -> Vec<u64> {
                match x.data_type() {
                    DataType::Float64 => x
                        .as_any()
                        .downcast_ref::<PrimitiveArray<Float64Type>>()
                        .unwrap()
                        .values()
                        .iter()
                        .map(|v| v.to_bits())
                        .collect(),
                    _ => x
                        .as_any()
                        .downcast_ref::<PrimitiveArray<Float32Type>>()
                        .unwrap()
                        .values()
                        .iter()
                        .map(|v| v.to_bits() as u64)
                        .collect(),
                }
            };
            assert_eq!(bits(&a), bits(&b), "{t} {hint:?}");
        }
        _ => assert_eq!(a.to_data(), b.to_data(), "{t} {hint:?}"),
    }
    bytes
}

fn nulls_of(valid: &[bool]) -> Option<NullBuffer> {
    Some(NullBuffer::from(valid.to_vec()))
}

/// Values from one of several ranges per vector, so that every width, Const, Diff and Simple
/// come up.
fn long_values() -> impl Strategy<Value = Vec<(i64, bool)>> {
    let ranges: Vec<(i64, i64)> = vec![
        (5, 5),
        (-3, 3),
        (-200, 200),
        (0, 70_000),
        (1_000_000, 1_000_300),
        (-(1 << 40), 1 << 40),
        ((1 << 32) - 5, (1 << 32) + 300),
        (i64::MIN / 2, i64::MAX / 2),
    ];
    (prop::sample::select(ranges), 0usize..200).prop_flat_map(|((lo, hi), n)| {
        prop::collection::vec((lo..=hi, prop::bool::weighted(0.8)), n)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn ints_round_trip(base in prop_oneof![Just(0i32), Just(250), Just(-40_000), Just(100_000), Just(i32::MIN / 2)],
                       spread in prop_oneof![Just(0i32), Just(1), Just(100), Just(300), Just(60_000), Just(1 << 24)],
                       cells in prop::collection::vec((0.0f64..1.0, prop::bool::weighted(0.8)), 0..300)) {
        let values: Vec<i32> = cells.iter().map(|(x, _)| base.wrapping_add((x * spread as f64) as i32)).collect();
        let valid: Vec<bool> = cells.iter().map(|c| c.1).collect();
        let input: ArrayRef = Arc::new(PrimitiveArray::<Int32Type>::new(values.into(), nulls_of(&valid)));
        for hint in HINTS { check_round_trip(&input, FiloType::Int, hint); }
    }

    #[test]
    fn longs_round_trip(cells in long_values()) {
        let values: Vec<i64> = cells.iter().map(|c| c.0).collect();
        let valid: Vec<bool> = cells.iter().map(|c| c.1).collect();
        let input: ArrayRef = Arc::new(PrimitiveArray::<Int64Type>::new(values.clone().into(), nulls_of(&valid)));
        for hint in HINTS { check_round_trip(&input, FiloType::Long, hint); }
        // Timestamps are always Diff (spans past i64::MAX are an error, tested elsewhere).
        let small: Vec<i64> = values.iter().map(|v| v / 4).collect();
        let ts: ArrayRef = Arc::new(PrimitiveArray::<TimestampMillisecondType>::new(small.into(), nulls_of(&valid)).with_timezone("UTC"));
        let bytes = check_round_trip(&ts, FiloType::Timestamp, Hint::AutoDetect);
        let w = filo::inspect(&bytes).unwrap().wire_type;
        prop_assert!(matches!(w, WireType::DiffPrimitive | WireType::Empty));
    }

    #[test]
    fn floats_round_trip(cells in prop::collection::vec((prop_oneof![any::<f64>(), Just(1.5f64), Just(-0.0), Just(f64::NAN), Just(f64::INFINITY)], prop::bool::weighted(0.7)), 0..200),
                         constant in any::<bool>()) {
        let values: Vec<f64> = cells.iter().map(|c| if constant { 2.25 } else { c.0 }).collect();
        let valid: Vec<bool> = cells.iter().map(|c| c.1).collect();
        let d: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::new(values.clone().into(), nulls_of(&valid)));
        check_round_trip(&d, FiloType::Double, Hint::AutoDetect);
        let f: ArrayRef = Arc::new(PrimitiveArray::<Float32Type>::new(values.iter().map(|v| *v as f32).collect::<Vec<_>>().into(), nulls_of(&valid)));
        check_round_trip(&f, FiloType::Float, Hint::AutoDetect);
    }

    #[test]
    fn booleans_round_trip(cells in prop::collection::vec((prop::bool::weighted(0.1), prop::bool::weighted(0.8)), 0..400)) {
        let mut b = BooleanBuilder::new();
        for (v, ok) in &cells { b.append_option(ok.then_some(*v)); }
        let input: ArrayRef = Arc::new(b.finish());
        check_round_trip(&input, FiloType::Boolean, Hint::AutoDetect);
    }

    #[test]
    fn strings_round_trip(cells in prop::collection::vec((prop_oneof![Just(String::new()), "[a-c]{1,2}", "\\PC{0,12}"], prop::bool::weighted(0.8)), 0..200)) {
        let mut b = StringBuilder::new();
        for (v, ok) in &cells { b.append_option(ok.then_some(v.as_str())); }
        let input: ArrayRef = Arc::new(b.finish());
        for hint in HINTS.into_iter().chain([Hint::FixedString]) {
            check_round_trip(&input, FiloType::String, hint);
        }
        let bin: ArrayRef = Arc::new(BinaryArray::from_iter(cells.iter().map(|(v, ok)| ok.then_some(v.as_bytes()))));
        let bytes = filo::encode(bin.as_ref(), FiloType::Binary, &Default::default()).unwrap();
        let back = filo::decode(&bytes, &DataType::Binary).unwrap();
        for i in 0..bin.len() { prop_assert_eq!(back.is_null(i), bin.is_null(i)); }
    }

    #[test]
    fn datetimes_round_trip(cells in prop::collection::vec((-(1i64 << 45)..(1i64 << 45), prop_oneof![Just(0i8), -95i8..=95], prop::bool::weighted(0.8)), 0..150),
                            narrow in any::<bool>()) {
        let millis: Vec<i64> = cells.iter().map(|c| if narrow { c.0 % 1000 + 1_300_000_000_000 } else { c.0 }).collect();
        let qh: Vec<i8> = cells.iter().map(|c| c.1).collect();
        let valid: Vec<bool> = cells.iter().map(|c| c.2).collect();
        let input: ArrayRef = Arc::new(StructArray::try_new(
            mapping::datetime_fields(),
            vec![
                Arc::new(PrimitiveArray::<TimestampMillisecondType>::from(millis).with_timezone("UTC")),
                Arc::new(PrimitiveArray::<Int8Type>::from(qh)),
            ],
            nulls_of(&valid),
        ).unwrap());
        let bytes = filo::encode(input.as_ref(), FiloType::DateTime, &Default::default()).unwrap();
        let back = filo::decode(&bytes, &mapping::datetime_type()).unwrap();
        let back = back.as_any().downcast_ref::<StructArray>().unwrap();
        let input = input.as_any().downcast_ref::<StructArray>().unwrap();
        let m = |s: &StructArray| s.column(0).as_any().downcast_ref::<PrimitiveArray<TimestampMillisecondType>>().unwrap().clone();
        let q = |s: &StructArray| s.column(1).as_any().downcast_ref::<PrimitiveArray<Int8Type>>().unwrap().clone();
        for i in 0..input.len() {
            prop_assert_eq!(back.is_null(i), input.is_null(i));
            if input.is_valid(i) {
                prop_assert_eq!(m(back).value(i), m(input).value(i));
                prop_assert_eq!(q(back).value(i), q(input).value(i));
            }
        }
    }
}

#[test]
fn writer_picks_filos_encodings() {
    let ints = |v: Vec<Option<i32>>| -> ArrayRef { Arc::new(PrimitiveArray::<Int32Type>::from(v)) };
    let kind = |a: &ArrayRef, t: FiloType, h: Hint| {
        let bytes = filo::encode(a.as_ref(), t, &EncodeOptions::default().with_hint(h)).unwrap();
        let info = filo::inspect(&bytes).unwrap();
        (info.wire_type, info.info, info.base, bytes.len())
    };
    // Appendix C sizes.
    let a = ints(vec![Some(1), Some(2), Some(-5), Some(101)]);
    assert_eq!(
        kind(&a, FiloType::Int, Hint::SimpleEncoding),
        (WireType::SimplePrimitive, Some((8, true)), None, 64)
    );
    let a = ints(vec![Some(500), Some(254), Some(257)]);
    assert_eq!(
        kind(&a, FiloType::Int, Hint::AutoDetect),
        (WireType::DiffPrimitive, Some((8, false)), Some(254), 76)
    );
    // The Simple hint turns Diff off; the Diff hint does not force it.
    assert_eq!(
        kind(&a, FiloType::Int, Hint::SimpleEncoding).0,
        WireType::SimplePrimitive
    );
    let a = ints(vec![Some(100), Some(200)]);
    assert_eq!(
        kind(&a, FiloType::Int, Hint::DiffEncoding).0,
        WireType::SimplePrimitive
    );
    let a = ints(vec![None; 7]);
    assert_eq!(
        kind(&a, FiloType::Int, Hint::AutoDetect),
        (WireType::Empty, None, None, 4)
    );
    let a = ints(vec![Some(7), None, Some(7)]);
    assert_eq!(
        kind(&a, FiloType::Int, Hint::SimpleEncoding).0,
        WireType::ConstPrimitive
    );
    // Equal infinite doubles are not Const.
    let d: ArrayRef = Arc::new(PrimitiveArray::<Float64Type>::from(vec![f64::INFINITY; 3]));
    assert_eq!(
        kind(&d, FiloType::Double, Hint::AutoDetect).0,
        WireType::SimplePrimitive
    );
    // Dict when distinct ≤ len/2, and on request.
    let s: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b", "a", "b"]));
    assert_eq!(
        kind(&s, FiloType::String, Hint::AutoDetect).0,
        WireType::DictString
    );
    let s: ArrayRef = Arc::new(arrow_array::StringArray::from(vec!["a", "b", "c"]));
    assert_eq!(
        kind(&s, FiloType::String, Hint::AutoDetect).0,
        WireType::SimpleString
    );
    assert_eq!(
        kind(&s, FiloType::String, Hint::DictionaryEncoding).0,
        WireType::DictString
    );
    assert_eq!(
        kind(&s, FiloType::String, Hint::FixedString).0,
        WireType::SimpleFixedString
    );
}

#[test]
fn timestamps_convert_units_and_refuse_fractions() {
    let us: ArrayRef = Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(vec![
        1_000, 5_000,
    ]));
    let bytes = filo::encode(us.as_ref(), FiloType::Timestamp, &Default::default()).unwrap();
    let back = filo::decode(&bytes, &mapping::timestamp_utc()).unwrap();
    let back = back
        .as_any()
        .downcast_ref::<PrimitiveArray<TimestampMillisecondType>>()
        .unwrap();
    assert_eq!(back.values().as_ref(), &[1, 5]);
    let us: ArrayRef = Arc::new(PrimitiveArray::<TimestampMicrosecondType>::from(vec![
        1_500,
    ]));
    let e = filo::encode(us.as_ref(), FiloType::Timestamp, &Default::default()).unwrap_err();
    assert_eq!(e.class(), ErrorClass::ValueOutOfRange);
    // A fixed-offset timestamp as DateTime; a named zone is refused.
    let ts: ArrayRef = Arc::new(
        PrimitiveArray::<TimestampMillisecondType>::from(vec![10, 20]).with_timezone("+05:30"),
    );
    let bytes = filo::encode(ts.as_ref(), FiloType::DateTime, &Default::default()).unwrap();
    assert_eq!(filo::inspect(&bytes).unwrap().base_tz, Some(22));
    let ts: ArrayRef = Arc::new(
        PrimitiveArray::<TimestampMillisecondType>::from(vec![10]).with_timezone("Europe/Paris"),
    );
    assert!(filo::encode(ts.as_ref(), FiloType::DateTime, &Default::default()).is_err());
    let _ = DataType::Timestamp(TimeUnit::Millisecond, None);
}

#[test]
fn long_all_na_vectors_are_tables_with_an_all_ones_mask() {
    let n = filo::MAX_EMPTY_LEN + 1;
    let a: ArrayRef = Arc::new(PrimitiveArray::<Int32Type>::from(vec![None; n]));
    let bytes = filo::encode(a.as_ref(), FiloType::Int, &Default::default()).unwrap();
    let info = filo::inspect(&bytes).unwrap();
    assert_eq!(info.wire_type, WireType::SimplePrimitive);
    assert_eq!(info.mask, filo::MaskKind::AllOnes);
    let back = filo::decode(&bytes, &DataType::Int32).unwrap();
    assert_eq!(back.null_count(), n);
}

/// Every golden vector (written by filo itself) decodes to the same array from an Arrow buffer
/// as from bytes; the plain 32-bit and Boolean ones share the buffer's memory instead of
/// copying it, and so do arrowsmith's own. 64-bit bodies sit 4 bytes off an 8-byte boundary
/// (the FlatBuffer follows a 4-byte header), which Arrow does not allow: they are copied.
#[test]
fn plain_vectors_decoded_from_a_buffer_share_its_memory() {
    fn shares(buffer: &arrow_buffer::Buffer, array: &ArrayRef) -> bool {
        let range = buffer.as_ptr() as usize..buffer.as_ptr() as usize + buffer.len();
        let data = array.to_data();
        data.buffers()
            .first()
            .is_some_and(|b| !b.is_empty() && range.contains(&(b.as_ptr() as usize)))
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/filo/vectors");
    let manifest = std::fs::read_to_string(dir.join("manifest.jsonl")).unwrap();
    let mut shared = Vec::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let name = entry["name"].as_str().unwrap();
        let filo_type: FiloType = entry["type"].as_str().unwrap().parse().unwrap();
        let data_type = filo_type.arrow_type();
        let bytes = fixture(name);
        // Arrow's own allocation is 64-byte aligned, like a mapped file.
        let buffer = arrow_buffer::Buffer::from_vec(bytes.clone());
        let (Ok(copied), Ok(from_buffer)) = (
            filo::decode(&bytes, &data_type),
            filo::decode_buffer(&buffer, &data_type),
        ) else {
            continue;
        };
        assert_eq!(copied.as_ref(), from_buffer.as_ref(), "{name}");
        if shares(&buffer, &from_buffer) {
            let structure = entry["structure"].as_str().unwrap();
            assert!(
                structure.starts_with("SimplePrimitiveVector"),
                "{name}: {structure}"
            );
            shared.push(name.to_string());
        }
    }
    for name in ["int_i32", "float_with_na", "bool_with_na"] {
        assert!(
            shared.iter().any(|s| s == name),
            "{name} was copied: {shared:?}"
        );
    }

    let arrays: [(ArrayRef, FiloType); 4] = [
        (
            Arc::new(PrimitiveArray::<Int64Type>::from(vec![
                Some(i64::MIN),
                None,
                Some(i64::MAX),
            ])),
            FiloType::Long,
        ),
        (
            Arc::new(PrimitiveArray::<Float64Type>::from(vec![
                Some(1.5),
                None,
                Some(-2.25),
            ])),
            FiloType::Double,
        ),
        (
            Arc::new(PrimitiveArray::<Int32Type>::from(vec![
                Some(i32::MIN),
                None,
                Some(i32::MAX),
            ])),
            FiloType::Int,
        ),
        (
            Arc::new(PrimitiveArray::<Float32Type>::from(vec![
                Some(0.5f32),
                None,
                Some(3.0),
            ])),
            FiloType::Float,
        ),
    ];
    for (array, filo_type) in arrays {
        let wide = matches!(filo_type, FiloType::Long | FiloType::Double);
        let options = EncodeOptions::default().with_hint(Hint::SimpleEncoding);
        let bytes = filo::encode(array.as_ref(), filo_type, &options).unwrap();
        let buffer = arrow_buffer::Buffer::from_vec(bytes);
        let back = filo::decode_buffer(&buffer, &filo_type.arrow_type()).unwrap();
        assert_eq!(back.as_ref(), array.as_ref(), "{filo_type}");
        assert_eq!(shares(&buffer, &back), !wide, "{filo_type}");
    }
}

#[test]
fn dictionary_codes_that_expand_past_what_a_string_array_holds_are_an_error() {
    // A 256 KiB entry and 8,192 one-byte codes: a vector of about 270 KB whose strings would
    // take 2 GiB. The codes are all counted before anything is built, so this is an error (a
    // string array's offsets end at 2 GiB), not a panic or a 2 GiB allocation; read as a
    // dictionary, the same vector costs what its bytes do.
    let long = "x".repeat(256 << 10);
    let mut values = vec!["y"; 8192];
    values[0] = &long;
    let array: ArrayRef = Arc::new(arrow_array::StringArray::from(values));
    let mut bytes = filo::encode_array(&array, &EncodeOptions::default()).unwrap();
    assert_eq!(
        filo::inspect(&bytes).unwrap().wire_type,
        WireType::DictString
    );
    // Every element's code becomes the long entry's (the dictionary starts with "" for NA; the
    // encoder put "y" at 1 and the long string at 2).
    let short_run = [1u8; 8191];
    let at = bytes
        .windows(short_run.len())
        .position(|w| w == short_run)
        .expect("the short string's codes");
    assert_eq!(bytes[at - 1], 2, "the long string's code comes first");
    bytes[at..at + short_run.len()].fill(2);

    let e = filo::decode(&bytes, &DataType::Utf8).unwrap_err();
    assert_eq!(e.class(), ErrorClass::ValueOutOfRange, "{e}");
    assert!(
        e.message()
            .contains("the 8192 strings take 2147483648 bytes"),
        "{e}"
    );
    let dictionary = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8));
    let keys = filo::decode(&bytes, &dictionary).unwrap();
    assert_eq!(keys.len(), 8192);
}
