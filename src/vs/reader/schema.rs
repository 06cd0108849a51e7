//! The Arrow schema a VS file reads as (spec §14.1): the vector column (a fixed-shape tensor,
//! or a FixedSizeList of text), `app_data` as JSON text or msgpack bytes, the optional
//! `vs_offset` column, and the meta block as schema metadata.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema};
use base64::Engine;

use super::{AppDataMode, ReaderOptions};
use crate::vs::codec::Meta;
use crate::vs::mapping::*;
use crate::vs::msgpack_json;

/// The schema of §14.1.
pub fn schema_for(meta: Option<&Meta>, options: &ReaderOptions) -> Schema {
    let exact = options.app_data == AppDataMode::Msgpack;
    let mut metadata = std::collections::HashMap::new();
    metadata.insert(META_VERSION.to_owned(), "0".to_owned());
    let app_field = app_data_field(exact);
    let Some(meta) = meta else {
        metadata.insert(META_META.to_owned(), "absent".to_owned());
        return Schema::new(vec![app_field]).with_metadata(metadata);
    };
    metadata.insert(META_RANK.to_owned(), meta.rank().to_string());
    metadata.insert(META_DIMENSIONS.to_owned(), shape_json(&meta.dims));
    metadata.insert(
        META_RESOLUTION.to_owned(),
        meta.resolution.code().to_string(),
    );
    metadata.insert(
        META_RESOLUTION_NAME.to_owned(),
        meta.resolution.name().to_owned(),
    );
    metadata.insert(META_PACK.to_owned(), meta.pack.to_string());
    metadata.insert(META_PAGING.to_owned(), meta.paging.to_string());
    if let Some(attributes) = &meta.attributes {
        // Validated when parsed; a value without a JSON form is left out of the text key.
        if let Ok(value) = msgpack_json::parse_msgpack(attributes) {
            let mut text = String::new();
            if msgpack_json::msgpack_to_json(&value, &mut text).is_ok() {
                metadata.insert(META_ATTRIBUTES.to_owned(), text);
            }
        }
        if exact {
            metadata.insert(
                META_ATTRIBUTES_MSGPACK.to_owned(),
                base64::engine::general_purpose::STANDARD.encode(attributes),
            );
        }
    }
    let mut fields = vec![vector_field(meta, exact), app_field];
    if options.with_offsets {
        fields.push(Field::new(OFFSET_COLUMN, DataType::UInt64, false));
    }
    Schema::new(fields).with_metadata(metadata)
}

/// The field metadata that tags a column as JSON text.
fn json_tag() -> std::collections::HashMap<String, String> {
    [
        (EXTENSION_NAME.to_owned(), JSON_EXTENSION.to_owned()),
        (EXTENSION_METADATA.to_owned(), String::new()),
    ]
    .into()
}

/// The `app_data` column: JSON text, or the exact msgpack bytes.
fn app_data_field(exact: bool) -> Field {
    if exact {
        Field::new(APP_DATA_COLUMN, DataType::Binary, true).with_metadata(
            std::collections::HashMap::from([(FIELD_ENCODING.to_owned(), "msgpack".to_owned())]),
        )
    } else {
        Field::new(APP_DATA_COLUMN, DataType::Utf8, true).with_metadata(json_tag())
    }
}

/// The vector column's element field.
pub(super) fn item_field(meta: &Meta, exact: bool) -> Field {
    let item = Field::new("item", meta.resolution.arrow_type(exact), false);
    if meta.resolution == Resolution::Json && !exact {
        item.with_metadata(json_tag())
    } else {
        item
    }
}

/// The vector column: a FixedSizeList, tagged as a tensor when its elements are fixed-size.
fn vector_field(meta: &Meta, exact: bool) -> Field {
    let list = DataType::FixedSizeList(Arc::new(item_field(meta, exact)), meta.n as i32);
    let metadata: std::collections::HashMap<String, String> = if meta.resolution.is_variable() {
        [(FIELD_SHAPE.to_owned(), shape_json(&meta.dims))].into()
    } else {
        [
            (EXTENSION_NAME.to_owned(), TENSOR_EXTENSION.to_owned()),
            (EXTENSION_METADATA.to_owned(), tensor_metadata(&meta.dims)),
        ]
        .into()
    };
    Field::new(VECTOR_COLUMN, list, false).with_metadata(metadata)
}
