//! `poolsim import` on broken files: a truncated trace, a zero-filled file,
//! random bytes (bare and after a valid header), an empty file. Each is a
//! clear error naming the byte, exit 2, no panic, and no output written.

use std::fs;

use super::super::common::poolsim;
use super::{fixture, temp};

fn import_fails_cleanly(name: &str, bytes: &[u8], needle: &str) {
    let path = temp(name);
    fs::write(&path, bytes).unwrap();
    let png = temp(&format!("{name}.png"));
    let toml = temp(&format!("{name}.toml"));
    for extra in [
        &[][..],
        &[
            "--png",
            png.to_str().unwrap(),
            "--scenario",
            toml.to_str().unwrap(),
        ][..],
    ] {
        let mut args = vec!["import", path.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = poolsim(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.starts_with("error: "), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(out.stdout.is_empty(), "{name}");
        assert!(!png.exists() && !toml.exists(), "{name}: nothing written");
    }
    let _ = fs::remove_file(&path);
}

#[test]
fn import_truncated_trace_exits_2() {
    let bytes = fixture("net8-items");
    import_fails_cleanly("cut.nettrace", &bytes[..bytes.len() / 2], "truncated");
    import_fails_cleanly("cut-end.nettrace", &bytes[..bytes.len() - 1], "truncated");
}

#[test]
fn import_zero_filled_file_exits_2() {
    import_fails_cleanly("zeros.nettrace", &[0u8; 4096], "not a .nettrace file");
    import_fails_cleanly("empty.nettrace", &[], "byte 0");
}

#[test]
fn import_random_bytes_exit_2() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u8
    };
    let random: Vec<u8> = (0..10_000).map(|_| next()).collect();
    import_fails_cleanly("random.nettrace", &random, "byte ");
    // A valid header and Trace object, then noise.
    let mut v = fixture("net8-items")[..0x66].to_vec();
    v.extend_from_slice(&random);
    import_fails_cleanly("header-random.nettrace", &v, "byte ");
}
