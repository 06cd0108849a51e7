//! ExtentType XML (§6, §7) and the record layout it implies (§8).

use crate::error::{Error, ErrorClass, Result};

/// The kind of a DataSeries field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A bit in a shared byte.
    Bool,
    /// One unsigned byte.
    Byte,
    /// A 32-bit signed integer.
    Int32,
    /// A 64-bit signed integer.
    Int64,
    /// A 64-bit float.
    Double,
    /// Variable-length bytes: a 4-byte slot pointing into the variable area.
    Variable32,
    /// Fixed-length bytes of this size.
    FixedWidth(usize),
}

impl Kind {
    /// The kind as the XML's `type` attribute spells it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Bool => "bool",
            Kind::Byte => "byte",
            Kind::Int32 => "int32",
            Kind::Int64 => "int64",
            Kind::Double => "double",
            Kind::Variable32 => "variable32",
            Kind::FixedWidth(_) => "fixedwidth",
        }
    }
    /// The slot size class used by null compaction (1, 4 or 8; 0 for bools).
    pub fn class(self) -> usize {
        match self {
            Kind::Bool => 0,
            Kind::Byte | Kind::FixedWidth(_) => 1,
            Kind::Int32 | Kind::Variable32 => 4,
            Kind::Int64 | Kind::Double => 8,
        }
    }
    /// Bytes the field takes in a record (0 for a bool, which takes a bit).
    pub fn width(self) -> usize {
        match self {
            Kind::Bool => 0,
            Kind::Byte => 1,
            Kind::FixedWidth(n) => n,
            Kind::Int32 | Kind::Variable32 => 4,
            Kind::Int64 | Kind::Double => 8,
        }
    }
}

/// How a field's values are stored relative to others (§10).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relative {
    /// Delta from the previous record's value of the same field.
    SelfRel,
    /// Delta from another (earlier) field of the same record: its index in `fields`.
    Other(usize),
}

/// One field of the record, visible or hidden.
#[derive(Debug, Clone)]
pub struct Field {
    /// The field's name (`" " + name` for a hidden null bool).
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Hidden null bool of a nullable field (`" " + name`).
    pub hidden: bool,
    /// Index in `fields` of this field's hidden null bool.
    pub null_field: Option<usize>,
    /// Byte offset in the record; for bools the byte holding the bit.
    pub offset: usize,
    /// Bit mask for bools.
    pub mask: u8,
    /// `pack_unique="yes"`: equal variable32 values share one entry (§9.3).
    pub pack_unique: bool,
    /// `pack_scale`: stored values are `round(value / scale)` (§10).
    pub pack_scale: Option<f64>,
    /// `pack_relative`: stored as a delta (§10).
    pub relative: Option<Relative>,
    /// `opt_doublebase`: stored values are relative to this base.
    pub doublebase: Option<f64>,
    /// Every attribute of the `<field>` element except `name`, in document order, decoded.
    pub attrs: Vec<(String, String)>,
}

impl Field {
    /// A bool field with no packing and no place yet; the parser fills in the rest (the hidden
    /// null bool of a nullable field stays as it is).
    fn bool(name: String, hidden: bool) -> Field {
        Field {
            name,
            kind: Kind::Bool,
            hidden,
            null_field: None,
            offset: 0,
            mask: 0,
            pack_unique: false,
            pack_scale: None,
            relative: None,
            doublebase: None,
            attrs: Vec::new(),
        }
    }

    /// The attribute `key` of the `<field>` element, decoded.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A parsed and laid out extent type.
#[derive(Debug, Clone)]
pub struct ExtentType {
    /// The type's name, as extents refer to it.
    pub name: String,
    /// The XML exactly as stored.
    pub xml: String,
    /// Every attribute of `<ExtentType>` in document order, decoded.
    pub attrs: Vec<(String, String)>,
    /// All fields in list order, hidden null bools included.
    pub fields: Vec<Field>,
    /// Indices in `fields` of the visible fields, in XML order.
    pub visible: Vec<usize>,
    /// Bytes of one record in the fixed part (§8).
    pub record_size: usize,
    /// `pack_null_compact="non_bool"`: null values are left out of the fixed part (§11).
    pub null_compact: bool,
    /// `pack_field_ordering="big_to_small_sep_var32"` (§8.2).
    pub big_to_small: bool,
    /// Records padded to a multiple of the widest field (`pack_pad_record="max_column_size"`).
    pub pad_max: bool,
    /// 1 + the highest byte offset holding a bool (0 without bools).
    pub bool_bytes: usize,
    /// `(major, minor)` from the `version` attribute.
    pub version: (i32, i32),
}

/// Name of the built-in extent type that holds the other types' XML.
pub const XMLTYPE_NAME: &str = "DataSeries: XmlType";
/// Name of the built-in extent type that indexes the data extents.
pub const INDEX_NAME: &str = "DataSeries: ExtentIndex";

impl ExtentType {
    /// The attribute `key` of `<ExtentType>`, decoded.
    pub fn attr(&self, key: &str) -> Option<&str> {
        self.attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The built-in `DataSeries: XmlType`.
    pub fn xmltype() -> ExtentType {
        ExtentType::parse(
            "<ExtentType name=\"DataSeries: XmlType\">\n  <field type=\"variable32\" name=\"xmltype\" />\n</ExtentType>\n",
        )
        .expect("built-in type")
    }

    /// The built-in `DataSeries: ExtentIndex`.
    pub fn index() -> ExtentType {
        ExtentType::parse(
            "<ExtentType name=\"DataSeries: ExtentIndex\">\n  <field type=\"int64\" name=\"offset\" />\n  <field type=\"variable32\" name=\"extenttype\" />\n</ExtentType>\n",
        )
        .expect("built-in type")
    }

    /// Parses and validates one ExtentType document (§6), and lays out its record (§8). An
    /// error is [`ErrorClass::BadMeta`], naming the attribute at fault as its field.
    pub fn parse(xml: &str) -> Result<ExtentType> {
        let options = roxmltree::ParsingOptions {
            allow_dtd: true,
            ..Default::default()
        };
        let doc = roxmltree::Document::parse_with_options(xml, options)
            .map_err(|e| bad(format!("the ExtentType XML does not parse: {e}")))?;
        let root = doc.root_element();
        if root.tag_name().name() != "ExtentType" {
            return Err(bad(format!(
                "the XML's root element is <{}>, expected <ExtentType>",
                root.tag_name().name()
            )));
        }
        let global = GlobalOptions::parse(root)?;
        let mut fields: Vec<Field> = Vec::new();
        let mut relatives: Vec<(usize, String)> = Vec::new();
        for child in root.children() {
            if child.is_text() && child.text().unwrap_or("").trim().is_empty() {
                continue;
            }
            let parsed = parse_field(child, &fields)?;
            let idx = fields.len();
            if let Some(base) = parsed.relative_to {
                relatives.push((idx, base));
            }
            let hidden = parsed
                .nullable
                .then(|| Field::bool(format!(" {}", parsed.field.name), true));
            fields.push(parsed.field);
            if let Some(hidden) = hidden {
                fields[idx].null_field = Some(fields.len());
                fields.push(hidden);
            }
        }
        resolve_relatives(&mut fields, relatives)?;
        let visible = (0..fields.len()).filter(|&i| !fields[i].hidden).collect();
        let mut t = ExtentType {
            name: global.name,
            xml: xml.to_string(),
            attrs: global.attrs,
            fields,
            visible,
            record_size: 0,
            null_compact: global.null_compact,
            big_to_small: global.big_to_small,
            pad_max: global.pad_max,
            bool_bytes: 0,
            version: global.version,
        };
        t.layout();
        if t.null_compact && !t.fields.iter().any(|f| f.kind == Kind::Bool) {
            return Err(bad("pack_null_compact needs at least one bool field")
                .with_field("pack_null_compact"));
        }
        Ok(t)
    }

    fn layout(&mut self) {
        let n32 = self.fields.iter().filter(|f| f.kind == Kind::Int32).count();
        let nv = self
            .fields
            .iter()
            .filter(|f| f.kind == Kind::Variable32)
            .count();
        let n8 = self
            .fields
            .iter()
            .filter(|f| matches!(f.kind, Kind::Int64 | Kind::Double))
            .count();
        let original = !self.pad_max;
        let mut pos = 0usize;
        let place_bools = |fields: &mut [Field], pos: &mut usize| {
            let mut bit = 0u8;
            let mut any = false;
            for f in fields.iter_mut().filter(|f| f.kind == Kind::Bool) {
                f.offset = *pos;
                f.mask = 1 << bit;
                any = true;
                bit += 1;
                if bit == 8 {
                    bit = 0;
                    *pos += 1;
                }
            }
            if any && bit != 0 {
                *pos += 1;
            }
        };
        let place = |fields: &mut [Field], pos: &mut usize, pred: &dyn Fn(Kind) -> bool| {
            for f in fields.iter_mut().filter(|f| pred(f.kind)) {
                f.offset = *pos;
                *pos += f.kind.width();
            }
        };
        let small = |k: Kind| matches!(k, Kind::Byte | Kind::FixedWidth(_));
        let i32k = |k: Kind| k == Kind::Int32;
        let v32k = |k: Kind| k == Kind::Variable32;
        let big = |k: Kind| matches!(k, Kind::Int64 | Kind::Double);
        if !self.big_to_small {
            place_bools(&mut self.fields, &mut pos);
            place(&mut self.fields, &mut pos, &small);
            if original || n32 > 0 || nv > 0 {
                pos = pos.next_multiple_of(4);
            }
            place(&mut self.fields, &mut pos, &i32k);
            place(&mut self.fields, &mut pos, &v32k);
            if original || n8 > 0 {
                pos = pos.next_multiple_of(8);
            }
            place(&mut self.fields, &mut pos, &big);
        } else {
            place(&mut self.fields, &mut pos, &big);
            place(&mut self.fields, &mut pos, &i32k);
            place(&mut self.fields, &mut pos, &v32k);
            place(&mut self.fields, &mut pos, &small);
            place_bools(&mut self.fields, &mut pos);
            let align = if n8 > 0 || original {
                8
            } else if n32 + nv > 0 {
                4
            } else {
                1
            };
            pos = pos.next_multiple_of(align);
        }
        self.record_size = pos;
        self.bool_bytes = self
            .fields
            .iter()
            .filter(|f| f.kind == Kind::Bool)
            .map(|f| f.offset + 1)
            .max()
            .unwrap_or(0);
    }
}

/// A [`ErrorClass::BadMeta`] error about the ExtentType XML.
fn bad(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::BadMeta, message)
}

/// The attributes of `<ExtentType>` (§6.1).
struct GlobalOptions {
    name: String,
    attrs: Vec<(String, String)>,
    null_compact: bool,
    big_to_small: bool,
    pad_max: bool,
    version: (i32, i32),
}

impl GlobalOptions {
    fn parse(root: roxmltree::Node<'_, '_>) -> Result<GlobalOptions> {
        let mut o = GlobalOptions {
            name: String::new(),
            attrs: Vec::new(),
            null_compact: false,
            big_to_small: false,
            pad_max: false,
            version: (0, 0),
        };
        let mut name = None;
        for a in root.attributes() {
            let (k, v) = (a.name().to_string(), a.value().to_string());
            let refuse = |why: String| Err(bad(why).with_field(k.clone()));
            if v.is_empty() && k != "namespace" {
                return refuse("the <ExtentType> attribute is empty".into());
            }
            match k.as_str() {
                "name" => name = Some(v.clone()),
                "namespace" | "comment" => {}
                "version" => o.version = parse_version(&v).map_err(|e| e.with_field(k.clone()))?,
                "pack_null_compact" => {
                    o.null_compact = match v.as_str() {
                        "no" => false,
                        "non_bool" => true,
                        _ => return refuse(format!("{v:?} is not no or non_bool")),
                    }
                }
                "pack_pad_record" => {
                    o.pad_max = match v.as_str() {
                        "original" => false,
                        "max_column_size" => true,
                        _ => return refuse(format!("{v:?} is not original or max_column_size")),
                    }
                }
                "pack_field_ordering" => {
                    o.big_to_small = match v.as_str() {
                        "small_to_big_sep_var32" => false,
                        "big_to_small_sep_var32" => true,
                        _ => return refuse(format!("{v:?} is not a known field ordering")),
                    }
                }
                _ if k.starts_with("pack_") || k.starts_with("opt_") => {
                    return refuse("an unrecognized global packing option".into())
                }
                _ => {}
            }
            o.attrs.push((k, v));
        }
        o.name =
            name.ok_or_else(|| bad("<ExtentType> has no name attribute").with_field("name"))?;
        if o.name.is_empty() || o.name.len() > 255 {
            return Err(
                bad(format!("type name {:?} must be 1 to 255 bytes", o.name)).with_field("name"),
            );
        }
        Ok(o)
    }
}

/// One `<field>` element, parsed but not yet placed: its pack_relative base is resolved once
/// every field is known.
struct ParsedField {
    field: Field,
    nullable: bool,
    relative_to: Option<String>,
}

/// The attributes of a `<field>` as given, before they are checked against each other.
#[derive(Default)]
struct FieldAttrs {
    name: Option<String>,
    kind: Option<String>,
    size: Option<String>,
    nullable: bool,
    scale_warn: bool,
    relative: Option<String>,
}

/// Parses one child of `<ExtentType>` as a `<field>` (§6.2); `earlier` are the fields before it.
fn parse_field(child: roxmltree::Node<'_, '_>, earlier: &[Field]) -> Result<ParsedField> {
    if child.is_text() {
        return Err(bad("<ExtentType> holds text; its children must be <field>"));
    }
    if !child.is_element() || child.tag_name().name() != "field" {
        let what = if child.is_comment() {
            "comment".to_string()
        } else if child.is_pi() {
            "processing instruction".to_string()
        } else {
            format!("<{}>", child.tag_name().name())
        };
        return Err(bad(format!("sub-element should be field, not {what}")));
    }
    let mut f = Field::bool(String::new(), false);
    let mut given = FieldAttrs::default();
    for a in child.attributes() {
        let (k, v) = (a.name().to_string(), a.value().to_string());
        if read_field_attr(&mut f, &mut given, &k, &v).map_err(|e| e.with_field(k.clone()))? {
            f.attrs.push((k, v));
        }
    }
    let fname = given
        .name
        .take()
        .ok_or_else(|| bad("a <field> has no name attribute").with_field("name"))?;
    if fname.is_empty() || fname.len() > 255 || fname.starts_with(' ') {
        return Err(bad(format!(
            "field name {fname:?} must be 1 to 255 bytes and not start with a space"
        ))
        .with_field("name"));
    }
    if earlier.iter().any(|g| g.name == fname) {
        return Err(bad(format!("field name {fname:?} appears twice")).with_field("name"));
    }
    f.kind = field_kind(&fname, &given)?;
    check_field_options(&f, &fname, &given)?;
    f.name = fname.clone();
    let mut relative_to = None;
    if let Some(r) = given.relative {
        if !matches!(f.kind, Kind::Int32 | Kind::Int64 | Kind::Double) {
            return Err(bad(format!(
                "field {fname:?}: pack_relative is allowed on int32, int64 and double only"
            ))
            .with_field("pack_relative"));
        }
        if r == fname {
            if f.kind == Kind::Double && f.pack_scale.is_none() {
                return Err(
                    bad(format!("self-relative double {fname:?} needs pack_scale"))
                        .with_field("pack_relative"),
                );
            }
            f.relative = Some(Relative::SelfRel);
        } else {
            relative_to = Some(r);
        }
    }
    Ok(ParsedField {
        field: f,
        nullable: given.nullable,
        relative_to,
    })
}

/// Reads one attribute of a `<field>` into `f` and `given`; `Ok(true)` when it is kept among
/// the field's attributes (all but `name`).
fn read_field_attr(f: &mut Field, given: &mut FieldAttrs, k: &str, v: &str) -> Result<bool> {
    if v.is_empty() {
        return Err(bad("the <field> attribute is empty"));
    }
    match k {
        "name" => {
            given.name = Some(v.to_owned());
            return Ok(false);
        }
        "type" => given.kind = Some(v.to_owned()),
        "size" => given.size = Some(v.to_owned()),
        "opt_nullable" => given.nullable = yes_no(v)?,
        "pack_unique" => f.pack_unique = yes_no(v)?,
        "pack_scale" => {
            let s = parse_num(v).ok_or_else(|| bad(format!("{v:?} is not a number")))?;
            if s == 0.0 || !s.is_finite() {
                return Err(bad(format!("{v:?} must be a non-zero number")));
            }
            f.pack_scale = Some(s);
        }
        "pack_scale_warn" => {
            yes_no(v)?;
            given.scale_warn = true;
        }
        "pack_relative" => given.relative = Some(v.to_owned()),
        "opt_doublebase" => {
            f.doublebase = Some(parse_num(v).ok_or_else(|| bad(format!("{v:?} is not a number")))?)
        }
        _ if k.starts_with("pack_") || k.starts_with("opt_") => {
            return Err(bad("an unrecognized local packing option"))
        }
        _ => {}
    }
    Ok(true)
}

/// The kind a `<field>`'s `type` (and `size`) attributes give.
fn field_kind(fname: &str, given: &FieldAttrs) -> Result<Kind> {
    let ftype = given
        .kind
        .as_deref()
        .ok_or_else(|| bad(format!("field {fname:?} has no type attribute")).with_field("type"))?;
    Ok(match ftype {
        "bool" => Kind::Bool,
        "byte" => Kind::Byte,
        "int32" => Kind::Int32,
        "int64" => Kind::Int64,
        "double" => Kind::Double,
        "variable32" => Kind::Variable32,
        "fixedwidth" => {
            let s = given.size.as_deref().ok_or_else(|| {
                bad(format!("fixedwidth field {fname:?} has no size")).with_field("size")
            })?;
            let n: i32 = s.trim().parse().map_err(|_| {
                bad(format!("{s:?} of field {fname:?} is not an integer")).with_field("size")
            })?;
            if n <= 0 {
                return Err(
                    bad(format!("{s:?} of field {fname:?} must be positive")).with_field("size")
                );
            }
            Kind::FixedWidth(n as usize)
        }
        other => {
            return Err(
                bad(format!("field {fname:?} has unknown type {other:?}")).with_field("type")
            )
        }
    })
}

/// The packing options a field's kind allows (§6.2).
fn check_field_options(f: &Field, fname: &str, given: &FieldAttrs) -> Result<()> {
    let only = |option: &str, kinds: &str| {
        Err(bad(format!(
            "field {fname:?}: {option} is allowed on {kinds} only"
        ))
        .with_field(option.to_owned()))
    };
    if given.size.is_some() && !matches!(f.kind, Kind::FixedWidth(_)) {
        return only("size", "fixedwidth fields");
    }
    if f.pack_unique && f.kind != Kind::Variable32 {
        return only("pack_unique", "variable32");
    }
    if f.pack_scale.is_some() && f.kind != Kind::Double {
        return only("pack_scale", "double");
    }
    if f.doublebase.is_some() && f.kind != Kind::Double {
        return only("opt_doublebase", "double");
    }
    if given.scale_warn && f.pack_scale.is_none() {
        return Err(bad(format!(
            "field {fname:?}: pack_scale_warn without pack_scale"
        ))
        .with_field("pack_scale_warn"));
    }
    Ok(())
}

/// Points each `pack_relative` field at its base, which must be an earlier visible field of the
/// same kind (§10).
fn resolve_relatives(fields: &mut [Field], relatives: Vec<(usize, String)>) -> Result<()> {
    for (idx, base) in relatives {
        let b = fields[..idx]
            .iter()
            .position(|g| !g.hidden && g.name == base)
            .ok_or_else(|| {
                bad(format!(
                    "field {:?} is relative to {base:?}, which is not an earlier field",
                    fields[idx].name
                ))
                .with_field("pack_relative")
            })?;
        if fields[b].kind != fields[idx].kind {
            return Err(bad(format!(
                "field {:?} is relative to {base:?}, a field of another type",
                fields[idx].name
            ))
            .with_field("pack_relative"));
        }
        fields[idx].relative = Some(Relative::Other(b));
    }
    Ok(())
}

fn yes_no(v: &str) -> Result<bool> {
    match v {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(bad(format!("{v:?} is not yes or no"))),
    }
}

/// A number in C `strtod` syntax (the common subset: decimal and exponent forms).
pub fn parse_num(v: &str) -> Option<f64> {
    v.trim().parse::<f64>().ok()
}

fn parse_version(v: &str) -> Result<(i32, i32)> {
    let wrong = || bad(format!("{v:?} is not MAJOR.MINOR"));
    let (a, b) = v.split_once('.').ok_or_else(wrong)?;
    if b.contains('.') {
        return Err(wrong());
    }
    Ok((
        a.trim().parse().map_err(|_| wrong())?,
        b.trim().parse().map_err(|_| wrong())?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_layouts() {
        let x = ExtentType::xmltype();
        assert_eq!(x.record_size, 8);
        let i = ExtentType::index();
        assert_eq!(i.record_size, 16);
        assert_eq!(i.fields[1].offset, 0);
        assert_eq!(i.fields[0].offset, 8);
    }

    #[test]
    fn read_write_layout() {
        let t = ExtentType::parse(
            r#"<ExtentType name="rw"><field type="int64" name="request_id"/><field type="int64" name="reply_id"/><field type="variable32" name="filehandle"/><field type="bool" name="is_read"/><field type="int64" name="offset"/><field type="int32" name="bytes"/></ExtentType>"#,
        )
        .unwrap();
        let off: Vec<usize> = t.fields.iter().map(|f| f.offset).collect();
        assert_eq!(off, vec![16, 24, 8, 0, 32, 4]);
        assert_eq!(t.record_size, 40);
    }

    #[test]
    fn structure_errors() {
        for bad in [
            "<Foo name='x'/>",
            "<ExtentType name='x'><!-- c --><field type='bool' name='a'/></ExtentType>",
            "<ExtentType name='x'><field type='bool' name='a' pack_relative=''/></ExtentType>",
            "<ExtentType name='x'><field type='float' name='a'/></ExtentType>",
            "<ExtentType name='x' pack_foo='1'></ExtentType>",
            "<ExtentType name='x'><field type='double' name='a' pack_relative='a'/></ExtentType>",
            "<ExtentType name='x'><field type='int32' name='a' pack_relative='b'/><field type='int32' name='b'/></ExtentType>",
            "<ExtentType name='x'",
        ] {
            assert!(ExtentType::parse(bad).is_err(), "{bad}");
        }
    }
}
