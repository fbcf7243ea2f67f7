//! Benchmarks shared by the kernels crate and the engine (filled in below).
