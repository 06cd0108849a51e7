//! `arrowsmith formats`.

use arrowsmith::inspect::TextTable;
use arrowsmith::Format;

use super::{print_out, CliResult};

pub(crate) fn run() -> CliResult {
    let mut table = TextTable::new(["NAME", "EXTENSIONS", "DIRECTORY", "DESCRIPTION"]);
    for format in Format::ALL {
        let extensions: Vec<String> = format
            .extensions()
            .iter()
            .map(|e| format!(".{e}"))
            .collect();
        table.row([
            format.name().to_string(),
            if extensions.is_empty() {
                "-".to_string()
            } else {
                extensions.join(" ")
            },
            if format.is_directory() { "yes" } else { "no" }.to_string(),
            crate::settings::spell_text(format.description()),
        ]);
    }
    print_out(&table.render(""))
}
