//! `arrowsmith sql` in a build without the `sql` feature (`--no-default-features`): the
//! subcommand stays, so that asking for it says how to get it rather than that it does not
//! exist.

use std::path::PathBuf;

use arrowsmith::Error;
use clap::Args;

use super::CliResult;

pub(crate) const ABOUT: &str =
    "Run SQL over files of any format (not in this build: it was built without the `sql` feature)";

pub(crate) const AFTER_HELP: &str = "This arrowsmith was built without the `sql` cargo feature \
(DataFusion), to build faster and smaller. To get `arrowsmith sql`, rebuild with the feature, \
which is on by default: cargo install --path cli";

#[derive(Debug, Args)]
pub(crate) struct SqlArgs {
    /// Whatever was given: this build cannot run it
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    arguments: Vec<String>,
    /// No statements file is read (the panic report names it in the full build).
    #[arg(skip)]
    pub(crate) file: Option<PathBuf>,
}

pub(crate) fn run(_: SqlArgs) -> CliResult {
    Err(Error::invalid_argument(
        "this arrowsmith was built without the `sql` feature (DataFusion), so it cannot run SQL; \
         rebuild it with the feature, which is on by default: cargo install --path cli",
    )
    .into())
}
