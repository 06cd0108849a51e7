//! The line `arrowsmith convert` prints on stderr when it is done, as `duckdb` and `parquet-cli`
//! report what they wrote: rows, columns, the output's size and the time taken.

use std::path::Path;
use std::time::Duration;

use arrowsmith::source::{is_url, registered_storage, RemoteEntry, StorageOptions};

/// What a finished conversion did.
pub(crate) struct Written<'a> {
    pub(crate) output: &'a Path,
    /// The settings OUTPUT was written with, when it is a URL: its size is asked of the store.
    pub(crate) storage: &'a StorageOptions,
    pub(crate) rows: u64,
    pub(crate) columns: usize,
    /// The rows went after those already in OUTPUT (`--append`).
    pub(crate) appended: bool,
    pub(crate) elapsed: Duration,
}

impl Written<'_> {
    /// `wrote 1,000 rows × 12 columns to all_types.parquet (48.2 KiB) in 0.03 s`; after an
    /// append, the size is that of the whole output (`appended … (now 1.2 MiB)`).
    pub(crate) fn line(&self) -> String {
        let (verb, size_prefix) = if self.appended {
            ("appended", "now ")
        } else {
            ("wrote", "")
        };
        let bytes = match is_url(self.output) {
            true => object_size(self.output, self.storage),
            false => disk_size(self.output),
        };
        let size = match bytes {
            Some(bytes) => format!(" ({size_prefix}{})", human_bytes(bytes)),
            None => String::new(),
        };
        format!(
            "{verb} {} {} × {} {} to {}{size} in {}",
            thousands(self.rows),
            plural(self.rows, "row"),
            self.columns,
            plural(self.columns as u64, "column"),
            self.output.display(),
            seconds(self.elapsed),
        )
    }
}

fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut text = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            text.push(',');
        }
        text.push(digit);
    }
    text
}

/// Bytes in binary units with one decimal: `512 B`, `48.2 KiB`, `1.5 GiB`.
fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

fn seconds(elapsed: Duration) -> String {
    let s = elapsed.as_secs_f64();
    if s < 10.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.1} s")
    }
}

/// The size of the object at a URL, as its store says (one request); `None` for a prefix (a
/// bcolz or Filo dataset: summing it would list every object) or when the store cannot say.
fn object_size(url: &Path, storage: &StorageOptions) -> Option<u64> {
    let url = url.to_str()?;
    match registered_storage(url).ok()?.stat(url, storage).ok()? {
        RemoteEntry::Object { size } => Some(size),
        RemoteEntry::Prefix | RemoteEntry::Missing => None,
    }
}

/// The size of a file, or of every file under a directory (a bcolz dataset).
fn disk_size(path: &Path) -> Option<u64> {
    let metadata = std::fs::metadata(path).ok()?;
    if !metadata.is_dir() {
        return Some(metadata.len());
    }
    let mut total = 0;
    for entry in std::fs::read_dir(path).ok()? {
        total += disk_size(&entry.ok()?.path())?;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_get_thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn sizes_are_in_binary_units() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1024), "1.0 KiB");
        assert_eq!(human_bytes(49_357), "48.2 KiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }

    #[test]
    fn one_row_and_one_column_are_singular() {
        let dir = tempfile::tempdir().unwrap();
        let output = dir.path().join("one.csv");
        std::fs::write(&output, b"a\n1\n").unwrap();
        let written = Written {
            output: &output,
            storage: &StorageOptions::default(),
            rows: 1,
            columns: 1,
            appended: false,
            elapsed: Duration::from_millis(31),
        };
        assert_eq!(
            written.line(),
            format!(
                "wrote 1 row × 1 column to {} (4 B) in 0.03 s",
                output.display()
            )
        );
    }
}
