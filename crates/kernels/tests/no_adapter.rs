//! Without an adapter, `testing::gpu()` skips, unless CI demands one. Its own test binary
//! (one process, one test) because it changes the environment.

use gpumem_kernels::testing::{self, REQUIRE_ADAPTER_ENV};
use gpumem_kernels::{Gpu, GpuError, GpuOptions};

#[test]
fn no_adapter_skips_or_fails_loudly() {
    // SAFETY: this binary has this one test, so no other thread reads the environment.
    unsafe {
        // Metal does not exist here (and on macOS, GL is not in this list's way): no adapter.
        std::env::set_var(
            "WGPU_BACKEND",
            if cfg!(target_os = "macos") {
                "dx12"
            } else {
                "metal"
            },
        );
        std::env::remove_var(REQUIRE_ADAPTER_ENV);
    }
    assert!(matches!(
        Gpu::new(&GpuOptions::default()),
        Err(GpuError::NoAdapter)
    ));
    assert!(testing::gpu().is_none());

    // SAFETY: as above, the one test of this binary.
    unsafe { std::env::set_var(REQUIRE_ADAPTER_ENV, "1") };
    let panicked = std::panic::catch_unwind(testing::gpu).is_err();
    assert!(
        panicked,
        "{REQUIRE_ADAPTER_ENV}=1 must turn a missing adapter into a failure"
    );
}
