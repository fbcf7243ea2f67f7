//! Running work on a backing: moving data in and out, and (with the MLP) the kernels.

mod transfer;

pub(crate) use transfer::{read_back, write};
