//! The WebAssembly boundary, as the calculator's: plain `extern "C"` functions over linear
//! memory, no generated glue. The page's worker writes the request's UTF-8 and the file's
//! bytes into buffers from [`replay_alloc`], calls [`replay_answer`], reads
//! [`replay_result_len`] bytes at [`replay_result_ptr`] and frees its buffers with
//! [`replay_free`]. Progress goes out through one function the page supplies
//! (`env.replay_progress(stage, done, of)`: 0 reading bytes, 1 replaying operations, 2 the
//! largest batch's search with replays so far and the batch tried).

use crate::{Progress, Stage};
use std::cell::RefCell;

thread_local! {
    /// The last answer, kept until the next call so the page can copy it out.
    static RESULT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

#[cfg(target_arch = "wasm32")]
#[link(wasm_import_module = "env")]
unsafe extern "C" {
    /// The page's progress callback.
    fn replay_progress(stage: u32, done: f64, of: f64);
}

/// Tells the page how far the work is (a no-op natively).
fn report(stage: Stage) {
    let (kind, done, of) = match stage {
        Stage::Reading { at, of } => (0, at as f64, of as f64),
        Stage::Replay(Progress::Replaying { done, of }) => (1, done as f64, of as f64),
        Stage::Replay(Progress::Searching { replays, batch }) => (2, replays as f64, batch as f64),
    };
    #[cfg(target_arch = "wasm32")]
    // SAFETY: the page supplies `env.replay_progress` taking (i32, f64, f64) and returning nothing.
    unsafe {
        replay_progress(kind, done, of)
    };
    #[cfg(not(target_arch = "wasm32"))]
    let _ = (kind, done, of);
}

/// A buffer of `len` bytes for the page to write into.
#[unsafe(no_mangle)]
pub extern "C" fn replay_alloc(len: usize) -> *mut u8 {
    let mut buffer = vec![0u8; len].into_boxed_slice();
    let ptr = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    ptr
}

/// Frees a buffer [`replay_alloc`] returned.
///
/// # Safety
/// `ptr` and `len` must be exactly what one call of [`replay_alloc`] returned and took,
/// and the buffer must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn replay_free(ptr: *mut u8, len: usize) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the caller passes back a boxed slice of `len` bytes leaked by `replay_alloc`.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
}

/// Answers the JSON request in `req_len` bytes at `req` about the file in `file_len` bytes
/// at `file`; returns the answer's length.
///
/// # Safety
/// `req` and `file` must point to that many readable bytes (buffers from [`replay_alloc`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn replay_answer(
    req: *const u8,
    req_len: usize,
    file: *const u8,
    file_len: usize,
) -> usize {
    // SAFETY: the caller guarantees `req_len` readable bytes at `req`.
    let request = unsafe { std::slice::from_raw_parts(req, req_len) };
    // SAFETY: the caller guarantees `file_len` readable bytes at `file`.
    let file = unsafe { std::slice::from_raw_parts(file, file_len) };
    let answer = match std::str::from_utf8(request) {
        Ok(r) => crate::answer(r, file, &mut report),
        Err(_) => crate::refused("the page's request is not UTF-8").to_string(),
    };
    keep(answer)
}

/// Answers the page's choices ([`crate::presets`]); returns the answer's length.
#[unsafe(no_mangle)]
pub extern "C" fn replay_presets() -> usize {
    keep(crate::presets::json())
}

/// Where the last answer's bytes are.
#[unsafe(no_mangle)]
pub extern "C" fn replay_result_ptr() -> *const u8 {
    RESULT.with_borrow(|r| r.as_ptr())
}

/// How many bytes the last answer has.
#[unsafe(no_mangle)]
pub extern "C" fn replay_result_len() -> usize {
    RESULT.with_borrow(Vec::len)
}

fn keep(answer: String) -> usize {
    let len = answer.len();
    RESULT.set(answer.into_bytes());
    len
}
