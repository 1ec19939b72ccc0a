//! poolsim in the browser: the simulator, the analyses and the report's
//! data compiled to WebAssembly for the playground (`web/playground/`,
//! built by `scripts/build-playground.sh`). The page edits a scenario and
//! calls in here on every change; what comes back is what the command line
//! would say about the same text — the chart's data, `run`'s summary,
//! `explain`'s narration, `run --runs`'s spread over seeds, or the error
//! with its line and column ([`playground`]).
//!
//! The interface is a plain C ABI over the module's linear memory, so the
//! page needs no generated glue (no wasm-bindgen):
//!
//! - [`alloc`]`(len) -> ptr` and [`dealloc`]`(ptr, len)`: buffers in the
//!   module's memory.
//! - [`poolsim_run`], [`poolsim_spread`]`(ptr, len) -> out`: a UTF-8 JSON
//!   request (a [`playground::Request`]) at `ptr`; `out` points at a
//!   4-byte little-endian length `n` followed by `n` bytes of JSON, which
//!   the caller frees with `dealloc(out, 4 + n)`. The request's buffer
//!   stays the caller's to free.
//! - [`poolsim_policies`]`() -> out`: the built-in policies, the same way.
//!
//! Everything runs on the calling thread (the spread's parallel runs too:
//! without threads, rayon runs them in turn), and a call is a pure
//! function of its request.

pub mod playground;

pub use playground::{policies_json, run_json, spread_json};

/// A buffer of `len` bytes for the caller to fill (a request).
#[unsafe(no_mangle)]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    Box::into_raw(vec![0u8; len].into_boxed_slice()).cast::<u8>()
}

/// Frees a buffer of `len` bytes from [`alloc`] or a response (`4 + n`).
///
/// # Safety
///
/// `ptr` and `len` must be those of one buffer this module handed out,
/// freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dealloc(ptr: *mut u8, len: usize) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the caller passes back a boxed slice of exactly `len` bytes
    // that `alloc` or `respond` leaked.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
}

/// The response buffer: the JSON's length (4 bytes, little-endian), then
/// the JSON.
fn respond(json: String) -> *mut u8 {
    let mut out = Vec::with_capacity(4 + json.len());
    out.extend_from_slice(&(json.len() as u32).to_le_bytes());
    out.extend_from_slice(json.as_bytes());
    Box::into_raw(out.into_boxed_slice()).cast::<u8>()
}

/// The request at `ptr` as text; a request that is not UTF-8 is refused
/// in JSON like any other.
///
/// # Safety
///
/// `ptr` must point at `len` readable bytes.
unsafe fn request<'a>(ptr: *const u8, len: usize) -> Result<&'a str, String> {
    if len == 0 {
        return Ok("");
    }
    // SAFETY: the caller wrote `len` bytes at `ptr` (a buffer of `alloc`).
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    std::str::from_utf8(bytes).map_err(|e| {
        serde_json::json!({
            "ok": false,
            "error": format!("error: the request is not UTF-8: {e}"),
            "diagnostics": [],
        })
        .to_string()
    })
}

/// Each policy's run of the request's scenario ([`run_json`]).
///
/// # Safety
///
/// `ptr` must point at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn poolsim_run(ptr: *const u8, len: usize) -> *mut u8 {
    // SAFETY: as this function's.
    respond(match unsafe { request(ptr, len) } {
        Ok(text) => run_json(text),
        Err(refusal) => refusal,
    })
}

/// Each policy's distribution over seeds ([`spread_json`]).
///
/// # Safety
///
/// `ptr` must point at `len` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn poolsim_spread(ptr: *const u8, len: usize) -> *mut u8 {
    // SAFETY: as this function's.
    respond(match unsafe { request(ptr, len) } {
        Ok(text) => spread_json(text),
        Err(refusal) => refusal,
    })
}

/// The built-in policies ([`policies_json`]).
#[unsafe(no_mangle)]
pub extern "C" fn poolsim_policies() -> *mut u8 {
    respond(policies_json())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the page does: write a request into a buffer of `alloc`, call,
    /// read the length-prefixed JSON, free both.
    fn call(f: unsafe extern "C" fn(*const u8, usize) -> *mut u8, request: &[u8]) -> String {
        let ptr = alloc(request.len());
        // SAFETY: `ptr` holds `request.len()` bytes; the response is read
        // within its length prefix and each buffer is freed once.
        unsafe {
            std::ptr::copy_nonoverlapping(request.as_ptr(), ptr, request.len());
            let out = f(ptr, request.len());
            dealloc(ptr, request.len());
            let n =
                u32::from_le_bytes(std::slice::from_raw_parts(out, 4).try_into().unwrap()) as usize;
            let json =
                String::from_utf8(std::slice::from_raw_parts(out.add(4), n).to_vec()).unwrap();
            dealloc(out, 4 + n);
            json
        }
    }

    #[test]
    fn a_call_through_the_abi_is_the_rust_call() {
        let request = serde_json::json!({
            "scenario": include_str!("../../../scenarios/seed-001-burst.toml"),
            "file": "scenarios/seed-001-burst.toml",
        })
        .to_string();
        assert_eq!(call(poolsim_run, request.as_bytes()), run_json(&request));
        assert_eq!(
            call(poolsim_spread, request.as_bytes()),
            spread_json(&request)
        );
    }

    #[test]
    fn a_request_that_is_not_text_or_json_is_refused_in_json() {
        let v: serde_json::Value =
            serde_json::from_str(&call(poolsim_run, b"{\"scenario\": \"\xff\"}")).unwrap();
        assert_eq!(v["ok"], false);
        assert!(v["error"].as_str().unwrap().contains("not UTF-8"), "{v}");
        let v: serde_json::Value = serde_json::from_str(&call(poolsim_run, b"")).unwrap();
        assert_eq!(v["ok"], false);
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("error: the request"),
            "{v}"
        );
    }

    #[test]
    fn the_policies_are_the_built_ins() {
        // SAFETY: the response is read within its length prefix, freed once.
        let json = unsafe {
            let out = poolsim_policies();
            let n =
                u32::from_le_bytes(std::slice::from_raw_parts(out, 4).try_into().unwrap()) as usize;
            let json =
                String::from_utf8(std::slice::from_raw_parts(out.add(4), n).to_vec()).unwrap();
            dealloc(out, 4 + n);
            json
        };
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        let names: Vec<&str> = v
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        let builtin: Vec<String> = poolsim_analysis::policy_file::builtin_policies()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, builtin);
        assert!(names.contains(&"net-classic") && names.contains(&"net8"));
    }
}
