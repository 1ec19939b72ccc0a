//! A file's bytes as text: at most [`MAX_FILE_BYTES`], valid UTF-8
//! ([`text_of_bytes`]), and no control character that TOML refuses, each
//! named with where it is.

use super::{Diagnostic, LoadError, line_col};

/// TOML allows no control character but tab, line feed and carriage return
/// anywhere, not even in a string; the parser's own message for one (a NUL
/// from a binary file, a stray escape) reads as an unclosed string. This
/// names the character and where it is instead.
pub(super) fn control_characters(text: &str, file: &str) -> Result<(), LoadError> {
    let Some((at, c)) = text
        .char_indices()
        .find(|&(_, c)| (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) && (c as u32) < 0x80)
    else {
        return Ok(());
    };
    let what = match c {
        '\0' => "a NUL byte (0x00)".to_string(),
        c => format!("the control character 0x{:02X}", c as u32),
    };
    let (line, column) = line_col(text, at);
    let mut d = Diagnostic::new(format!(
        "the file holds {what}: not plain text, which a TOML file must be"
    ))
    .in_file(file);
    d.line = Some(line);
    d.column = Some(column);
    Err(LoadError::new(d.with_help(
        "remove it (a binary file, or text saved by a tool that pads with NULs?); scenario and policy files are plain UTF-8 text",
    )))
}

/// Largest scenario or policy file read, in bytes: far above any real
/// file, and a bound when the path is a device like `/dev/zero`.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The text of a scenario or policy file from its bytes: at most
/// [`MAX_FILE_BYTES`] (a reader takes one byte more, to tell), valid UTF-8;
/// else a [`LoadError`] naming `file`. Reading the bytes is the caller's.
pub fn text_of_bytes(bytes: Vec<u8>, file: &str) -> Result<String, LoadError> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Diagnostic::new(format!(
            "the file is larger than {} MiB: not a scenario or policy file",
            MAX_FILE_BYTES >> 20
        ))
        .in_file(file)
        .into());
    }
    // A trace handed to a command that takes a scenario: say which
    // commands read traces, not "save it as UTF-8".
    if bytes.starts_with(b"Nettrace") {
        return Err(LoadError::new(
            Diagnostic::new(
                "this is a .nettrace trace (an EventPipe recording), not a scenario or policy file",
            )
            .in_file(file)
            .with_help(
                "`poolsim import FILE` shows what the real pool did in it, \
                 `poolsim advise FILE` drafts a scenario from it and finds a setting, \
                 `poolsim import FILE --scenario OUT.toml` writes the draft for `run`",
            ),
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let prefix = String::from_utf8_lossy(e.as_bytes().get(..valid).unwrap_or(&[])).into_owned();
        let (line, column) = line_col(&prefix, prefix.len());
        let byte = e.as_bytes().get(valid).copied().unwrap_or(0);
        let mut d = Diagnostic::new(format!(
            "the file is not valid UTF-8 text: byte 0x{byte:02X} is not part of a UTF-8 character"
        ))
        .in_file(file);
        d.line = Some(line);
        d.column = Some(column);
        LoadError::new(d.with_help(
            "save the file as UTF-8 (a byte like 0xE9 is a Latin-1/Windows-1252 character)",
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_is_named_as_one() {
        let mut bytes = b"Nettrace".to_vec();
        bytes.extend([20, 0, 0, 0, 0xEA, 0xFF]);
        let e = text_of_bytes(bytes, "app.nettrace").unwrap_err();
        assert!(e.message().contains(".nettrace trace"), "{e}");
        assert!(format!("{e}").contains("poolsim advise FILE"), "{e}");
    }

    #[test]
    fn bytes_become_text_only_within_the_size_cap() {
        assert_eq!(
            text_of_bytes(b"a = 1\n".to_vec(), "f.toml").unwrap(),
            "a = 1\n"
        );
        let too_big = vec![b' '; MAX_FILE_BYTES as usize + 1];
        let e = text_of_bytes(too_big, "f.toml").unwrap_err();
        assert!(e.message().contains("larger than 64 MiB"), "{e}");
        assert_eq!(e.file(), Some("f.toml"));
    }

    #[test]
    fn a_byte_that_is_not_utf8_is_placed_at_its_line_and_column() {
        let e = text_of_bytes(b"a = 1\nb = \"\xE9\"\n".to_vec(), "f.toml").unwrap_err();
        assert!(e.message().contains("byte 0xE9"), "{e}");
        let text = e.to_string();
        assert!(text.starts_with("f.toml:2:6:"), "{text}");
    }

    #[test]
    fn control_characters_are_named_and_tab_and_line_ends_are_not() {
        assert!(control_characters("a = 1\t# x\r\n", "f.toml").is_ok());
        let e = control_characters("a = 1\nb = \"\u{7}\"\n", "f.toml").unwrap_err();
        assert!(e.message().contains("control character 0x07"), "{e}");
        assert!(e.to_string().starts_with("f.toml:2:6:"), "{e}");
    }
}
