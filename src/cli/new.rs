//! `poolsim new FILE`: a commented starter scenario to edit.

use std::path::PathBuf;

use clap::Args;

use super::Failure;

/// The starter: every table and key a first scenario needs, commented.
pub const STARTER: &str = include_str!("starter.toml");

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  poolsim new my.toml && poolsim run my.toml
  poolsim new - | less

Exit codes: 0 written; 2 the file exists (use --force) or cannot be written.")]
pub struct NewArgs {
    /// Where to write it (`-` for stdout).
    pub file: PathBuf,
    /// Overwrite an existing file.
    #[arg(long)]
    pub force: bool,
}

pub fn run(args: NewArgs) -> Result<(), Failure> {
    if args.file.as_os_str() == "-" {
        print!("{STARTER}");
        return Ok(());
    }
    if args.file.exists() && !args.force {
        return Err(Failure::error(format!(
            "{} exists; pass --force to overwrite it",
            args.file.display()
        )));
    }
    let files = [(&args.file, STARTER.as_bytes().to_vec())];
    poolsim::output::write_all_atomic(&files)?;
    println!(
        "wrote {}; run it with: poolsim run {}",
        args.file.display(),
        args.file.display()
    );
    Ok(())
}
