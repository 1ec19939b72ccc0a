//! Why a command did not succeed, and its exit code: every command returns
//! `Result<(), Failure>` and uses `?` on the library's errors; `main`
//! prints what is left to print and exits with the code, in one place.

use std::fmt::Display;

use poolsim::diagnostics::LoadError;
use poolsim::measure::MeasureError;
use poolsim::sweep::SweepError;

/// Exit code for a check that missed its tolerance (a `reproduce` row
/// that is not a listed known miss, a `validate` check).
pub const EXIT_MISS: i32 = 1;
/// Exit code for bad input (scenario, policy or flags).
pub const EXIT_INPUT: i32 = 2;
/// Exit code for a run that did not complete (time limit, stall).
pub const EXIT_INCOMPLETE: i32 = 3;
/// Exit code of `advise` when no remedy meets the goal (no recommendation
/// is made up).
pub const EXIT_NO_ADVICE: i32 = 4;
/// Exit code of `advise` when the evidence holds nothing to advise on (a
/// trace with no pool work, or without the work-item events it needs).
pub const EXIT_EVIDENCE: i32 = 5;
/// Exit code of a run stopped by Ctrl-C.
pub const EXIT_INTERRUPTED: i32 = 130;

/// A command's failure. The text a variant carries is printed to stderr
/// as it is (a line end added), so it holds its own prefix: a `LoadError`
/// its `FILE:LINE:COL: error ...`, others `error: ...`.
#[derive(Debug)]
pub enum Failure {
    /// Exit 2: the flags did not parse (clap prints its own message).
    Usage(clap::Error),
    /// Exit 2: bad input (scenario, policy, flags, output path, a runtime
    /// that is missing or cannot run the scenario); the message.
    Input(String),
    /// Exit 1: a check missed its tolerance; the report said so.
    Miss,
    /// Exit 3: a run did not complete (deadlock, time limit, stall, a real
    /// run that failed); the message, if the output did not say it.
    Incomplete(Option<String>),
    /// Exit 130: stopped by Ctrl-C; what was kept.
    Interrupted(String),
    /// A command's own exit code, after its output said why.
    Exit(i32),
    /// A command's own exit code and the message for stderr.
    Message(i32, String),
}

impl Failure {
    /// Bad input, said as `error: MESSAGE`.
    pub fn error(message: impl Display) -> Failure {
        Failure::Input(format!("error: {message}"))
    }

    /// The process's exit code.
    pub fn exit_code(&self) -> i32 {
        match self {
            Failure::Usage(_) | Failure::Input(_) => EXIT_INPUT,
            Failure::Miss => EXIT_MISS,
            Failure::Incomplete(_) => EXIT_INCOMPLETE,
            Failure::Interrupted(_) => EXIT_INTERRUPTED,
            Failure::Exit(code) | Failure::Message(code, _) => *code,
        }
    }

    /// Prints the message (to stderr) and gives the exit code.
    pub fn report(&self) -> i32 {
        match self {
            Failure::Usage(e) => {
                let _ = e.print();
            }
            Failure::Input(text)
            | Failure::Incomplete(Some(text))
            | Failure::Interrupted(text)
            | Failure::Message(_, text) => eprintln!("{text}"),
            Failure::Miss | Failure::Incomplete(None) | Failure::Exit(_) => {}
        }
        self.exit_code()
    }
}

/// A scenario or policy file refused: its diagnostics, with their
/// locations and `error` words.
impl From<LoadError> for Failure {
    fn from(e: LoadError) -> Failure {
        Failure::Input(e.to_string())
    }
}

/// An output that cannot be rendered or written, with its causes.
impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Failure {
        Failure::Input(format!("error: {e:#}"))
    }
}

impl From<SweepError> for Failure {
    fn from(e: SweepError) -> Failure {
        Failure::error(e)
    }
}

impl From<serde_json::Error> for Failure {
    fn from(e: serde_json::Error) -> Failure {
        Failure::error(e)
    }
}

/// A message of this crate's checks (`chart_window`, `sweep`'s outputs):
/// `error: MESSAGE`.
impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure::error(message)
    }
}

/// A runtime that is missing or cannot express the scenario is bad input;
/// a run that failed, timed out or was killed did not complete.
impl From<MeasureError> for Failure {
    fn from(e: MeasureError) -> Failure {
        let text = format!("error: {e}");
        match e {
            MeasureError::Missing { .. } | MeasureError::Unsupported(_) => Failure::Input(text),
            _ => Failure::Incomplete(Some(text)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit codes `poolsim --help` documents, one per kind of failure.
    #[test]
    fn each_failure_has_its_documented_exit_code() {
        assert_eq!(Failure::error("x").exit_code(), 2);
        assert_eq!(Failure::Input("x".into()).exit_code(), 2);
        assert_eq!(Failure::Miss.exit_code(), 1);
        assert_eq!(Failure::Incomplete(None).exit_code(), 3);
        assert_eq!(Failure::Interrupted("kept".into()).exit_code(), 130);
        // Bad input reads as an error line of its own.
        match Failure::error("no such file") {
            Failure::Input(text) => assert_eq!(text, "error: no such file"),
            other => panic!("{other:?}"),
        }
    }
}
