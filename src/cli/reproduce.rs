//! `poolsim reproduce`: the seeds' published numbers against the models.

use clap::Args;

use poolsim::reproduce::{Row, SEEDS, known_miss, reproduce};

use super::Failure;

#[derive(Args, Debug)]
#[command(after_help = "\
Examples:
  poolsim reproduce            every seed's published figures against the models
  poolsim reproduce 001        one seed (001: the tenth Task.Run starts 4 s late)
  poolsim reproduce --json     the rows as JSON, for a script
  poolsim reproduce --strict   fail on the listed known misses too (for CI)

Exit codes: 0 every row within its tolerance, or missed only by a listed
known miss (it is printed as `miss` with its reason); 1 a row missed that is
not a known miss (the model has regressed), or any miss with --strict;
2 bad input.")]
pub struct ReproduceArgs {
    /// Only this seed (000, 001, 002, 003 or 004); default: all of them.
    pub seed: Option<String>,
    /// Print the rows as a JSON array.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 on a listed known miss too, not only on a new one.
    #[arg(long)]
    pub strict: bool,
}

pub fn run(args: ReproduceArgs) -> Result<(), Failure> {
    let seed = args.seed.as_deref().map(|s| s.trim_start_matches("seed-"));
    if let Some(s) = seed
        && !SEEDS.contains(&s)
    {
        return Err(Failure::error(format!(
            "unknown seed \"{s}\"\n  help: the seeds are {}",
            SEEDS.join(", ")
        )));
    }
    let rows = reproduce(seed);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print_table(&rows);
    }
    let failed = |r: &&Row| !r.pass && (args.strict || known_miss(r).is_none());
    if rows.iter().any(|r| failed(&r)) {
        Err(Failure::Miss)
    } else {
        Ok(())
    }
}

fn print_table(rows: &[Row]) {
    let mut seed = "";
    for r in rows {
        if r.seed != seed {
            seed = &r.seed;
            println!("seed {seed}");
        }
        println!(
            "  {} {:<44} {:<18}\n      published {}\n      simulated {}\n      error     {}   (tolerance {})",
            match (r.pass, known_miss(r)) {
                (true, _) => "pass",
                (false, Some(_)) => "miss",
                (false, None) => "FAIL",
            },
            r.case,
            r.policy,
            r.published,
            r.simulated,
            r.error,
            r.tolerance
        );
        if !r.pass {
            match known_miss(r) {
                Some(why) => println!("      known miss: {why}"),
                None => println!("      not a known miss: the model has regressed"),
            }
        }
    }
    let passed = rows.iter().filter(|r| r.pass).count();
    let known = rows
        .iter()
        .filter(|r| !r.pass && known_miss(r).is_some())
        .count();
    let failed = rows.len() - passed - known;
    if known == 0 {
        println!("\n{passed} passed, {failed} failed");
    } else {
        println!(
            "\n{passed} passed, {failed} failed, {known} known miss{} (listed with its reason; \
             it fails only with --strict)",
            if known == 1 { "" } else { "es" }
        );
    }
}
