//! `poolsim policies`: the built-in policies and what each models.

use super::Failure;

pub fn run() -> Result<(), Failure> {
    let policies = poolsim::policy_file::builtin_policies();
    let width = policies.iter().map(|p| p.name.len()).max().unwrap_or(0);
    for p in policies {
        let aliases = if p.aliases.is_empty() {
            String::new()
        } else {
            format!(" (also: {})", p.aliases.join(", "))
        };
        println!("{:<width$}  {}{}", p.name, p.description, aliases);
    }
    Ok(())
}
