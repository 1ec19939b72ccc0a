//! `poolsim reproduce`: the seeds' published numbers against the models.

use clap::Args;

use poolsim::reproduce::{Row, SEEDS, known_miss, reproduce};

use super::EXIT_INPUT;

#[derive(Args, Debug)]
#[command(after_help = "\
Exit codes: 0 every row within its tolerance; 1 a row missed (each miss
says whether it is a known one, and why); 2 bad input.")]
pub struct ReproduceArgs {
    /// Only this seed (000, 001, 002, 003 or 004); default: all of them.
    pub seed: Option<String>,
    /// Print the rows as a JSON array.
    #[arg(long)]
    pub json: bool,
}

/// Exit code when a row misses its tolerance.
const EXIT_MISS: i32 = 1;

pub fn run(args: ReproduceArgs) -> i32 {
    let seed = args.seed.as_deref().map(|s| s.trim_start_matches("seed-"));
    if let Some(s) = seed
        && !SEEDS.contains(&s)
    {
        eprintln!(
            "error: unknown seed \"{s}\"\n  help: the seeds are {}",
            SEEDS.join(", ")
        );
        return EXIT_INPUT;
    }
    let rows = reproduce(seed);
    if args.json {
        match serde_json::to_string_pretty(&rows) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("error: {e}");
                return EXIT_INPUT;
            }
        }
    } else {
        print_table(&rows);
    }
    if rows.iter().all(|r| r.pass) {
        0
    } else {
        EXIT_MISS
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
            if r.pass { "pass" } else { "FAIL" },
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
    println!("\n{passed} passed, {} failed", rows.len() - passed);
}
