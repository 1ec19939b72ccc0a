//! Scenario files: TOML in, a validated [`Scenario`] out.
//!
//! Two stages: `raw` mirrors the file with serde (`deny_unknown_fields`),
//! `load` checks every value and cross-field rule and builds the
//! [`model`] types. Every error names the file, the line and column, and the
//! TOML path of the offending value.

pub mod arrivals;
pub mod load;
pub mod model;
pub mod raw;

pub use model::*;
