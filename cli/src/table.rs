//! Plain text tables: columns padded to their widest cell.

#[derive(Debug, Default)]
pub(crate) struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    right: Vec<bool>,
}

impl Table {
    pub fn new<S: Into<String>>(header: impl IntoIterator<Item = S>) -> Table {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let right = vec![false; header.len()];
        Table {
            header,
            rows: Vec::new(),
            right,
        }
    }

    /// Aligns these columns (numbers) to the right.
    pub fn right_align(mut self, columns: &[usize]) -> Table {
        for &c in columns {
            if let Some(r) = self.right.get_mut(c) {
                *r = true;
            }
        }
        self
    }

    pub fn row<S: Into<String>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table, each line starting with `indent` and ending with a line break.
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
    fn pads_and_aligns() {
        let mut t = Table::new(["name", "rows"]).right_align(&[1]);
        t.row(["a", "1"]);
        t.row(["long name", "1000"]);
        assert_eq!(
            t.render("  "),
            "  name       rows\n  a             1\n  long name  1000\n"
        );
    }
}
