//! The `arrowsmith` command line: a thin layer over the library (see `src/cli/`).

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
