//! Plain text tables: columns padded to their widest cell.

/// A plain text table as the text report draws its parts: a header line, then one line per
/// row, each column padded to its widest cell and two spaces apart. Public so that a front end
/// prints its own tables (a list of formats) in the report's style.
///
/// ```
/// use arrowsmith::inspect::TextTable;
///
/// let mut table = TextTable::new(["name", "rows"]).right_align(&[1]);
/// table.row(["a", "1"]);
/// table.row(["long name", "1000"]);
/// assert_eq!(table.render(""), "name       rows\na             1\nlong name  1000\n");
/// ```
#[derive(Debug, Default, Clone)]
pub struct TextTable {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<bool>,
}

impl TextTable {
    /// A table with these column headings and no rows yet.
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> TextTable {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let right = vec![false; header.len()];
        TextTable {
            header,
            rows: Vec::new(),
            right,
        }
    }

    /// Aligns these columns (numbers) to the right.
    pub fn right_align(mut self, columns: &[usize]) -> TextTable {
        for &c in columns {
            if let Some(r) = self.right.get_mut(c) {
                *r = true;
            }
        }
        self
    }

    /// Adds a row; a row shorter than the header leaves its last columns empty.
    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Whether no row was added.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table, each line starting with `indent` and ending with a line break; trailing
    /// spaces are trimmed.
    pub fn render(&self, indent: &str) -> String {
        let ncols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; ncols];
        for line in std::iter::once(&self.header).chain(&self.rows) {
            for (w, cell) in widths.iter_mut().zip(line) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        for line in std::iter::once(&self.header).chain(&self.rows) {
            let mut text = String::from(indent);
            for (i, w) in widths.iter().enumerate() {
                let cell = line.get(i).map(String::as_str).unwrap_or("");
                let pad = w.saturating_sub(cell.chars().count());
                if i > 0 {
                    text.push_str("  ");
                }
                if self.right.get(i).copied().unwrap_or(false) {
                    text.extend(std::iter::repeat_n(' ', pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    if i + 1 < ncols {
                        text.extend(std::iter::repeat_n(' ', pad));
                    }
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_pads_widens_to_a_long_row_and_trims_the_line_ends() {
        let mut t = TextTable::new(["name", "rows"]).right_align(&[1]);
        t.row(["a", "1"]);
        t.row(["long name", "1000"]);
        assert_eq!(
            t.render("  "),
            "  name       rows\n  a             1\n  long name  1000\n"
        );
        // A row longer than the header gets a column without heading; a short one ends early.
        let mut t = TextTable::new(["a"]);
        t.row(["x", "extra"]);
        t.row(["yy"]);
        assert_eq!(t.render(""), "a\nx   extra\nyy\n");
    }
}
