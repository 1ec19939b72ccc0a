//! The `poolsim` command: parses flags, calls the library, prints.

mod cli;

fn main() {
    std::process::exit(cli::main());
}
