//! The ExtentType a writer uses (§20.4): Arrow types mapped to DataSeries kinds, the XML
//! generated from a schema or a given one checked against it, and the writer's own limits.

use arrow_schema::{DataType, Schema, TimeUnit};

use super::super::types::{ExtentType, Kind};
use super::WriterOptions;
use crate::error::{Error, ErrorClass, Result};

/// The DataSeries kind an Arrow type is written as, and its `arrow_type` hint (§20.4).
pub fn kind_for(dt: &DataType) -> Option<(Kind, Option<&'static str>)> {
    Some(match dt {
        DataType::Boolean => (Kind::Bool, None),
        DataType::UInt8 => (Kind::Byte, None),
        DataType::Int32 => (Kind::Int32, None),
        DataType::Int64 | DataType::Timestamp(_, _) => (Kind::Int64, None),
        DataType::Float64 => (Kind::Double, None),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => (Kind::Variable32, None),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            (Kind::Variable32, Some("utf8"))
        }
        DataType::FixedSizeBinary(n) if *n > 0 => (Kind::FixedWidth(*n as usize), None),
        DataType::Int8 => (Kind::Int32, Some("int8")),
        DataType::Int16 => (Kind::Int32, Some("int16")),
        DataType::UInt16 => (Kind::Int32, Some("uint16")),
        DataType::UInt32 => (Kind::Int64, Some("uint32")),
        DataType::Float16 => (Kind::Double, Some("float16")),
        DataType::Float32 => (Kind::Double, Some("float32")),
        DataType::Dictionary(_, v) => match v.as_ref() {
            DataType::Utf8 | DataType::LargeUtf8 => (Kind::Variable32, Some("utf8")),
            DataType::Binary | DataType::LargeBinary => (Kind::Variable32, None),
            _ => return None,
        },
        _ => return None,
    })
}

/// The Arrow type a field is packed from: every column is cast to it before packing. A
/// `pack_unique` field given a dictionary stays one (Int32 keys into Binary values), so that
/// its values are numbered once per dictionary entry rather than hashed row by row.
pub(super) fn canonical(kind: Kind, pack_unique: bool, input: &DataType) -> DataType {
    match kind {
        Kind::Bool => DataType::Boolean,
        Kind::Byte => DataType::UInt8,
        Kind::Int32 => DataType::Int32,
        Kind::Int64 => DataType::Int64,
        Kind::Double => DataType::Float64,
        Kind::Variable32 if pack_unique && matches!(input, DataType::Dictionary(_, _)) => {
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Binary))
        }
        Kind::Variable32 => DataType::Binary,
        Kind::FixedWidth(n) => DataType::FixedSizeBinary(n as i32),
    }
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// Builds the ExtentType XML for a schema (§20.4, rule 3).
pub fn generate_xml(schema: &Schema, name: &str) -> Result<String> {
    let md = schema.metadata();
    let mut root: Vec<(String, String)> = vec![
        ("name".into(), name.to_string()),
        (
            "namespace".into(),
            md.get("dataseries.namespace")
                .cloned()
                .unwrap_or_else(|| "arrowsmith".into()),
        ),
        (
            "version".into(),
            md.get("dataseries.version")
                .cloned()
                .unwrap_or_else(|| "1.0".into()),
        ),
    ];
    let mut rest: Vec<(String, String)> = md
        .iter()
        .filter_map(|(k, v)| {
            k.strip_prefix("dataseries.")
                .map(|k| (k.to_string(), v.clone()))
        })
        .filter(|(k, _)| !matches!(k.as_str(), "xml" | "name" | "namespace" | "version"))
        .collect();
    rest.sort();
    root.extend(rest);
    let mut xml = String::from("<ExtentType");
    for (k, v) in &root {
        xml.push_str(&format!(" {k}=\"{}\"", xml_escape(v)));
    }
    xml.push_str(">\n");
    for (i, f) in schema.fields().iter().enumerate() {
        let (kind, hint) = kind_for(f.data_type()).ok_or_else(|| {
            Error::new(
                ErrorClass::UnsupportedType,
                format!(
                    "DataSeries has no type for Arrow {}; cast the column to a supported type (e.g. Int64, Float64, Utf8)",
                    f.data_type()
                ),
            )
            .with_column(i, Some(f.name()))
        })?;
        let mut attrs: Vec<(String, String)> = f
            .metadata()
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix("dataseries.")
                    .map(|k| (k.to_string(), v.clone()))
            })
            .filter(|(k, _)| !matches!(k.as_str(), "type" | "name" | "opt_nullable" | "arrow_type"))
            .collect();
        if let Kind::FixedWidth(n) = kind {
            attrs.retain(|(k, _)| k != "size");
            attrs.push(("size".into(), n.to_string()));
        }
        if let DataType::Timestamp(u, _) = f.data_type() {
            attrs.retain(|(k, _)| k != "units" && k != "epoch");
            let units = match u {
                TimeUnit::Second => "seconds",
                TimeUnit::Millisecond => "milliseconds",
                TimeUnit::Microsecond => "microseconds",
                TimeUnit::Nanosecond => "nanoseconds",
            };
            attrs.push(("units".into(), units.into()));
            attrs.push(("epoch".into(), "unix".into()));
        }
        if matches!(f.data_type(), DataType::Dictionary(_, _))
            && !attrs.iter().any(|(k, _)| k == "pack_unique")
        {
            attrs.push(("pack_unique".into(), "yes".into()));
        }
        if let Some(h) = hint {
            attrs.push(("arrow_type".into(), h.into()));
        }
        if f.is_nullable() {
            attrs.push(("opt_nullable".into(), "yes".into()));
        }
        attrs.sort();
        xml.push_str(&format!(
            "  <field type=\"{}\" name=\"{}\"",
            kind.name(),
            xml_escape(f.name())
        ));
        for (k, v) in &attrs {
            xml.push_str(&format!(" {k}=\"{}\"", xml_escape(v)));
        }
        xml.push_str(" />\n");
    }
    xml.push_str("</ExtentType>\n");
    Ok(xml)
}

/// Checks that a type fits a schema: same visible names in order, kinds, nullability. The
/// error is [`ErrorClass::InvalidArgument`] naming the column.
fn type_matches(t: &ExtentType, schema: &Schema) -> Result<()> {
    let misfit = |m: String| {
        Error::invalid_argument(format!("the given ExtentType does not fit the data: {m}"))
    };
    if t.visible.len() != schema.fields().len() {
        return Err(misfit(format!(
            "the type has {} fields, the data {} columns",
            t.visible.len(),
            schema.fields().len()
        )));
    }
    for (column, (&i, f)) in t.visible.iter().zip(schema.fields()).enumerate() {
        let df = &t.fields[i];
        let at = |e: Error| e.with_column(column, Some(f.name()));
        if df.name != *f.name() {
            return Err(at(misfit(format!(
                "the type's field there is {:?}",
                df.name
            ))));
        }
        let kind = kind_for(f.data_type()).map(|k| k.0);
        if kind != Some(df.kind) {
            return Err(at(misfit(format!(
                "field {:?} is {} but the column is Arrow {}",
                df.name,
                df.kind.name(),
                f.data_type()
            ))));
        }
        if df.null_field.is_some() != f.is_nullable() {
            return Err(at(misfit(format!(
                "field {:?}: nullability differs from the column's",
                df.name
            ))));
        }
    }
    Ok(())
}

/// Chooses the ExtentType (§20.4): user XML, else the schema's `dataseries.xml` if it fits, else generated.
pub fn resolve_type(schema: &Schema, options: &WriterOptions, stem: &str) -> Result<ExtentType> {
    if let Some(xml) = &options.xml {
        // The setting's name: the XML's own attribute, if the error has one, is more precise.
        let t = ExtentType::parse(xml).map_err(|e| e.with_field("xml"))?;
        type_matches(&t, schema)?;
        return Ok(t);
    }
    if let Some(xml) = schema.metadata().get("dataseries.xml") {
        if let Ok(t) = ExtentType::parse(xml) {
            let name_ok = options.type_name.as_ref().is_none_or(|n| *n == t.name);
            if name_ok && type_matches(&t, schema).is_ok() {
                return Ok(t);
            }
        }
    }
    let name = options
        .type_name
        .clone()
        .or_else(|| schema.metadata().get("dataseries.name").cloned())
        .unwrap_or_else(|| stem.to_string());
    let xml = generate_xml(schema, &name)?;
    ExtentType::parse(&xml).map_err(|e| {
        Error::new(
            ErrorClass::BadMeta,
            format!("the generated ExtentType is invalid: {}", e.message()),
        )
    })
}

/// Validates the writer-side constraints of §17.2.
pub(super) fn check_writable(t: &ExtentType) -> Result<()> {
    let bad = |m: &str| Error::new(ErrorClass::Unsupported, format!("type {:?}: {m}", t.name));
    if t.null_compact && t.big_to_small {
        return Err(bad(
            "null compaction with big_to_small_sep_var32 ordering cannot be read by the reference",
        ));
    }
    if t.null_compact
        && t.fields
            .iter()
            .any(|f| matches!(f.kind, Kind::FixedWidth(_)))
    {
        return Err(bad(
            "fixedwidth fields with null compaction cannot be read by the reference",
        ));
    }
    Ok(())
}
