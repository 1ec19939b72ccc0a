//! Real runs: a scenario executed on a real thread pool (Mono, .NET Core
//! 3.1, .NET 8 through the CLR harness, or the native Rust pool), read back
//! into the simulator's own [`crate::trace::Trace`].

pub mod native;
