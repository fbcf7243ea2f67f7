//! The executor: what it holds back, and when it lets go.

use crate::Role;
use crate::alloc::AllocatorConfig;
use crate::device::DeviceOptions;
use crate::ops::{self, Matmul};
use crate::tensor::{DType, Tensor};
use crate::testing::gpu;
use crate::{Device, MemorySpec};

fn filled(device: &Device, rows: u64, cols: u64, v: f32, label: &str) -> Tensor {
    let t = Tensor::new(device, rows, cols, DType::F32, Role::Temporary, label).unwrap();
    t.write(&vec![v; (rows * cols) as usize]).unwrap();
    t
}

/// A product is held back (it may join a ReLU); its input is dropped before the next
/// operation. The product must run before the input's block is freed — with the cache
/// off, before its segment goes back to the device — and compute what it would have.
#[test]
fn a_held_operation_runs_before_its_memory_is_freed() {
    let Some(gpu) = gpu() else { return };
    for caching in [true, false] {
        let options = DeviceOptions {
            memory: MemorySpec::Bytes(64 << 20),
            allocator: AllocatorConfig {
                caching,
                ..Default::default()
            },
            ..Default::default()
        };
        let device = gpu.device_with(&options);
        let a = filled(&device, 4, 3, 2.0, "a");
        let b = filled(&device, 3, 5, 0.5, "b");
        let c = Tensor::new(&device, 4, 5, DType::F32, Role::Temporary, "c").unwrap();
        ops::matmul(Matmul::default(), &a, &b, &c, None).unwrap();
        assert!(
            device.borrow().exec.pending.is_some(),
            "the product is held"
        );
        drop(a);
        assert!(
            device.borrow().exec.pending.is_none(),
            "run before the free"
        );
        // Something else in the freed memory, then the product's output read back.
        let _other = filled(&device, 4, 3, -7.0, "other");
        assert_eq!(c.read::<f32>().unwrap(), vec![3.0; 20], "caching {caching}");
    }
}

/// The step's pairs on the cpu backing run one operation at a time (nothing held).
#[test]
fn the_cpu_backing_holds_nothing_back() {
    let device = Device::cpu(64 << 20);
    let a = filled(&device, 2, 2, 1.0, "a");
    let c = Tensor::new(&device, 2, 2, DType::F32, Role::Temporary, "c").unwrap();
    ops::matmul(Matmul::default(), &a, &a, &c, None).unwrap();
    assert!(device.borrow().exec.pending.is_none());
    assert_eq!(c.read::<f32>().unwrap(), vec![2.0; 4]);
}
