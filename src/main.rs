//! The `poolsim` command: parses flags, calls the library, prints.

mod cli;

fn main() {
    let code = match cli::run() {
        Ok(()) => 0,
        Err(failure) => failure.report(),
    };
    std::process::exit(code);
}
