//! The WebAssembly boundary: plain `extern "C"` functions over linear memory, so the page
//! needs no generated glue. The page writes the request's UTF-8 bytes into a buffer from
//! [`calculator_alloc`], calls [`calculator_calculate`] (or [`calculator_presets`]), reads
//! [`calculator_result_len`] bytes at [`calculator_result_ptr`], and frees its buffer with
//! [`calculator_free`].

use std::cell::RefCell;

thread_local! {
    /// The last answer, kept until the next call so the page can copy it out.
    static RESULT: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `len` bytes for the page to write a request into.
#[unsafe(no_mangle)]
pub extern "C" fn calculator_alloc(len: usize) -> *mut u8 {
    let mut buffer = vec![0u8; len].into_boxed_slice();
    let ptr = buffer.as_mut_ptr();
    std::mem::forget(buffer);
    ptr
}

/// Frees a buffer [`calculator_alloc`] returned.
///
/// # Safety
/// `ptr` and `len` must be exactly what one call of [`calculator_alloc`] returned and took,
/// and the buffer must not be used afterwards.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calculator_free(ptr: *mut u8, len: usize) {
    if ptr.is_null() {
        return;
    }
    // SAFETY: the caller passes back a boxed slice of `len` bytes leaked by `calculator_alloc`.
    drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
}

/// Calculates the JSON request in `len` bytes at `ptr`; returns the answer's length.
///
/// # Safety
/// `ptr` must point to `len` readable bytes (a buffer from [`calculator_alloc`]).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn calculator_calculate(ptr: *const u8, len: usize) -> usize {
    // SAFETY: the caller guarantees `len` readable bytes at `ptr`.
    let bytes = unsafe { std::slice::from_raw_parts(ptr, len) };
    let answer = match std::str::from_utf8(bytes) {
        Ok(request) => crate::calculate(request),
        Err(_) => crate::error_json("the calculator's input is not UTF-8"),
    };
    keep(answer)
}

/// Answers the presets; returns the answer's length.
#[unsafe(no_mangle)]
pub extern "C" fn calculator_presets() -> usize {
    keep(crate::presets())
}

/// Where the last answer's bytes are.
#[unsafe(no_mangle)]
pub extern "C" fn calculator_result_ptr() -> *const u8 {
    RESULT.with_borrow(|r| r.as_ptr())
}

/// How many bytes the last answer has.
#[unsafe(no_mangle)]
pub extern "C" fn calculator_result_len() -> usize {
    RESULT.with_borrow(Vec::len)
}

fn keep(answer: String) -> usize {
    let len = answer.len();
    RESULT.set(answer.into_bytes());
    len
}
