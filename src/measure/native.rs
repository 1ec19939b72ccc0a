//! Native backend: real OS threads on the host driven by a policy model.
//! (Placeholder until the backend lands.)

use std::time::Duration;

use crate::policy::PolicyConfig;
use crate::scenario::Scenario;
use crate::trace::Trace;

/// How a native run is bounded and sampled.
#[derive(Clone, Debug)]
pub struct NativeOptions {
    /// Wall-clock limit of the whole run; past it the run stops with
    /// [`NativeError::TimedOut`].
    pub timeout: Duration,
    /// Period of the thread-count samples in [`Trace::counts`].
    pub sample_every: Duration,
}

impl Default for NativeOptions {
    fn default() -> Self {
        NativeOptions {
            timeout: Duration::from_secs(600),
            sample_every: Duration::from_millis(10),
        }
    }
}

/// Why a native run did not produce a trace.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The scenario needs something the native pool does not model.
    #[error("the native pool cannot run this scenario: {0}")]
    Unsupported(String),
    /// The run passed its wall-clock limit.
    #[error("the native run passed its {0:?} limit")]
    TimedOut(Duration),
}

/// Runs `scenario` on real threads under the policy `config`.
pub fn run_native(
    _scenario: &Scenario,
    _config: &PolicyConfig,
    _opts: &NativeOptions,
) -> Result<Trace, NativeError> {
    Err(NativeError::Unsupported("not built yet".into()))
}
