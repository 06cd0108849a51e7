//! A bare Filo vector: the first byte chooses the element type, the rest is the vector; also
//! `inspect`'s path (the vector's header and encoding).
#![no_main]

use arrowsmith::filo::{self, FiloType, WireType};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&choice, bytes)) = data.split_first() else {
        return;
    };
    let types: Vec<FiloType> = FiloType::SET_TYPES
        .into_iter()
        .chain([FiloType::Binary])
        .collect();
    let t = types[choice as usize % types.len()];
    // An EmptyVector's length is 24 bits of its header, so most mutations of one declare
    // millions of NAs, which `new_null_array` zeroes and `validate_full` walks: 92 % of this
    // target's time in session 4 (perf), for a decode that is the same call at any length.
    // A long one is only checked to be refused as a shorter chunk, before it is decoded.
    if let Ok(info) = filo::inspect(bytes) {
        if info.wire_type == WireType::Empty && info.len > 1 << 12 {
            let refused = filo::decode_rows(bytes, &t.arrow_type(), info.len / 2);
            assert!(
                refused.is_err(),
                "a vector is not read as a chunk of another length"
            );
            return;
        }
    }
    if let Ok(array) = filo::decode(bytes, &t.arrow_type()) {
        array
            .to_data()
            .validate_full()
            .expect("a decoded vector is a valid array");
        // Reading a prefix of the rows, as a set's chunk does, agrees with the whole.
        let rows = array.len() / 2;
        if let Ok(part) = filo::decode_rows(bytes, &t.arrow_type(), rows) {
            part.to_data().validate_full().expect("valid");
        }
    }
    let _ = filo::inspect(bytes);
});
