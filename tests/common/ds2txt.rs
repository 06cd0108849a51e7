//! Renders DataSeries columns the way the reference `ds2txt` prints them (its default text
//! format), so that decoded values can be compared line by line with the stored `.ds.txt` files.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, RecordBatch};
use arrow_schema::{DataType, Field};

/// C `%g` with precision `p`.
pub fn fmt_g(x: f64, p: usize, alt: bool) -> String {
    if x.is_nan() {
        return "nan".into();
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    let p = p.max(1);
    if x == 0.0 {
        return if x.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let e = format!("{:.*e}", p - 1, x);
    let (_, exp) = e.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let strip = |s: String| -> String {
        if alt || !s.contains('.') {
            return s;
        }
        let s = s.trim_end_matches('0');
        s.trim_end_matches('.').to_string()
    };
    if exp < -4 || exp >= p as i32 {
        let (m, _) = e.split_once('e').unwrap();
        let m = strip(m.to_string());
        format!("{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        strip(format!("{:.*}", (p as i32 - 1 - exp) as usize, x))
    }
}

pub enum Val {
    I(i128),
    F(f64),
}

/// A printf subset: `%[flags][width][.prec][l|ll|h]conv` for d i u x X g f e, plus literals.
pub fn printf(fmt: &str, v: Val) -> String {
    let mut out = String::new();
    let mut it = fmt.chars().peekable();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        if it.peek() == Some(&'%') {
            it.next();
            out.push('%');
            continue;
        }
        let mut zero = false;
        let mut left = false;
        let mut alt = false;
        while let Some(&f) = it.peek() {
            match f {
                '0' => zero = true,
                '-' => left = true,
                '#' => alt = true,
                '+' | ' ' => {}
                _ => break,
            }
            it.next();
        }
        let mut width = 0usize;
        while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
            width = width * 10 + d as usize;
            it.next();
        }
        let mut prec = None;
        if it.peek() == Some(&'.') {
            it.next();
            let mut p = 0;
            while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
                p = p * 10 + d as usize;
                it.next();
            }
            prec = Some(p);
        }
        while matches!(
            it.peek(),
            Some('l') | Some('h') | Some('q') | Some('j') | Some('z')
        ) {
            it.next();
        }
        let conv = it.next().unwrap_or('d');
        let (iv, fv) = match v {
            Val::I(i) => (i, i as f64),
            Val::F(f) => (f as i128, f),
        };
        let body = match conv {
            'd' | 'i' => iv.to_string(),
            'u' => (iv as u64).to_string(),
            'x' => format!("{:x}", iv as u64),
            'X' => format!("{:X}", iv as u64),
            'f' => format!("{:.*}", prec.unwrap_or(6), fv),
            'e' => format!("{:.*e}", prec.unwrap_or(6), fv),
            _ => fmt_g(fv, prec.unwrap_or(6), alt),
        };
        let body = if body.len() < width {
            let pad = width - body.len();
            if left {
                format!("{body}{}", " ".repeat(pad))
            } else if zero {
                let (sign, digits) = body
                    .strip_prefix('-')
                    .map_or(("", body.as_str()), |d| ("-", d));
                format!("{sign}{}{digits}", "0".repeat(pad))
            } else {
                format!("{}{body}", " ".repeat(pad))
            }
        } else {
            body
        };
        out.push_str(&body);
    }
    out
}

fn md<'a>(f: &'a Field, k: &str) -> Option<&'a str> {
    f.metadata()
        .get(&format!("dataseries.{k}"))
        .map(|s| s.as_str())
}

/// One `ds2txt` line per row of `batch` (a batch read with default options, all columns).
pub fn render(batch: &RecordBatch) -> Vec<String> {
    let schema = batch.schema();
    let mut lines = vec![String::new(); batch.num_rows()];
    for (ci, col) in batch.columns().iter().enumerate() {
        let f = schema.field(ci);
        let fmt = md(f, "print_format");
        for (r, line) in lines.iter_mut().enumerate() {
            if ci > 0 {
                line.push(' ');
            }
            if col.is_null(r) {
                line.push_str("null");
                continue;
            }
            let s = match col.data_type() {
                DataType::Boolean => {
                    let b = col.as_boolean().value(r);
                    if b {
                        md(f, "print_true").unwrap_or("T").to_string()
                    } else {
                        md(f, "print_false").unwrap_or("F").to_string()
                    }
                }
                DataType::UInt8 => {
                    let v = col.as_primitive::<UInt8Type>().value(r) as i128;
                    fmt.map_or(v.to_string(), |p| printf(p, Val::I(v)))
                }
                DataType::Int32 => {
                    let v = col.as_primitive::<Int32Type>().value(r) as i128;
                    fmt.map_or(v.to_string(), |p| printf(p, Val::I(v)))
                }
                DataType::Int64 | DataType::Timestamp(_, _) => {
                    let v = arrow::compute::cast(col, &DataType::Int64).unwrap();
                    let v = v.as_primitive::<Int64Type>().value(r) as i128;
                    fmt.map_or(v.to_string(), |p| printf(p, Val::I(v)))
                }
                DataType::Float64 => {
                    let mut v = col.as_primitive::<Float64Type>().value(r);
                    if let Some(b) = md(f, "opt_doublebase") {
                        v -= b.parse::<f64>().unwrap();
                    }
                    fmt.map_or(fmt_g(v, 9, false), |p| printf(p, Val::F(v)))
                }
                DataType::Binary | DataType::Utf8 => {
                    let v: &[u8] = match col.data_type() {
                        DataType::Binary => col.as_binary::<i32>().value(r),
                        _ => col.as_string::<i32>().value(r).as_bytes(),
                    };
                    let hex = md(f, "print_style") == Some("hex")
                        || md(f, "print_hex") == Some("yes")
                        || !v.iter().all(|&c| (0x20..0x7f).contains(&c));
                    if hex {
                        v.iter().map(|b| format!("{b:02x}")).collect()
                    } else {
                        String::from_utf8(v.to_vec()).unwrap()
                    }
                }
                DataType::FixedSizeBinary(_) => col
                    .as_fixed_size_binary()
                    .value(r)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect(),
                other => panic!("no ds2txt rendering for {other}"),
            };
            line.push_str(&s);
        }
    }
    lines
}

/// The data rows of type `name` in a ds2txt output, in order.
pub fn rows_of_type(text: &str, name: &str) -> Vec<String> {
    let header = format!("# Extent, type='{name}'");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut inside = false;
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        if l.starts_with("# Extent, type=") {
            inside = l == header;
            i += 2; // the header and the field names
            continue;
        }
        if l.starts_with("extent offset") || l.starts_with("# Extent Types") {
            inside = false;
        } else if inside {
            out.push(l.to_string());
        }
        i += 1;
    }
    out
}

#[test]
fn g_format_matches_c() {
    assert_eq!(fmt_g(0.590492512345, 9, false), "0.590492512");
    assert_eq!(fmt_g(1e300, 17, false), "1.0000000000000001e+300");
    assert_eq!(fmt_g(-2.5e-300, 17, false), "-2.5e-300");
    assert_eq!(fmt_g(123456789.125, 17, false), "123456789.125");
    assert_eq!(fmt_g(102339.536123, 9, false), "102339.536");
    assert_eq!(printf("%08x", Val::I(255)), "000000ff");
    assert_eq!(printf("V%d", Val::I(3)), "V3");
}
