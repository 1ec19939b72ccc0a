//! The one error type of the reader: what went wrong and at which byte.

use std::io;

/// Why a `.nettrace` file could not be read. Every variant carries the byte
/// offset (from the start of the file) where reading stopped.
#[derive(Debug, thiserror::Error)]
pub enum NetTraceError {
    /// The bytes are not what the format allows here.
    #[error("byte {offset}: {message}")]
    Format { offset: u64, message: String },
    /// The file ends in the middle of something (a truncated trace: the
    /// traced process was killed, or the copy is incomplete).
    #[error("byte {offset}: the file ends early, in the middle of {what} (truncated trace?)")]
    Truncated { offset: u64, what: &'static str },
    /// A valid trace in a version or variant this reader does not decode.
    #[error("byte {offset}: unsupported: {message}")]
    Unsupported { offset: u64, message: String },
    /// A declared length is beyond this reader's limits (a corrupt file,
    /// most likely).
    #[error("byte {offset}: {what} of {value} is over the limit of {limit}")]
    TooLarge {
        offset: u64,
        what: &'static str,
        value: u64,
        limit: u64,
    },
    /// The underlying reader failed.
    #[error("byte {offset}: read error: {source}")]
    Io {
        offset: u64,
        #[source]
        source: io::Error,
    },
}

impl NetTraceError {
    /// The byte offset where reading stopped.
    pub fn offset(&self) -> u64 {
        match self {
            NetTraceError::Format { offset, .. }
            | NetTraceError::Truncated { offset, .. }
            | NetTraceError::Unsupported { offset, .. }
            | NetTraceError::TooLarge { offset, .. }
            | NetTraceError::Io { offset, .. } => *offset,
        }
    }

    pub(crate) fn format(offset: u64, message: impl Into<String>) -> Self {
        NetTraceError::Format {
            offset,
            message: message.into(),
        }
    }
}
