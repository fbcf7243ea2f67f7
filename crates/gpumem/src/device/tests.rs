use super::*;
use crate::alloc::EventKind;
use crate::tensor::{DType, Tensor};

const MIB: u64 = 1 << 20;

use crate::testing::{gpu as test_gpu, wgpu_device};
use gpumem_kernels::gpu::Gpu;
use gpumem_kernels::testing::skip_on_gl;

fn wgpu_device_on(gpu: Rc<Gpu>, memory: MemorySpec, max_buffer: Option<u64>) -> Option<Device> {
    let store = match max_buffer {
        Some(m) => BufferStore::with_max_buffer(gpu, m),
        None => BufferStore::new(gpu),
    };
    let options = DeviceOptions {
        memory,
        ..Default::default()
    };
    Some(
        Device::with_backing(
            Backing::Wgpu(store),
            "test adapter".into(),
            "test".into(),
            &options,
        )
        .unwrap(),
    )
}

#[test]
fn backend_names_parse() {
    assert_eq!("auto".parse(), Ok(Backend::Auto));
    assert_eq!("WGPU".parse(), Ok(Backend::Wgpu));
    assert_eq!("cpu".parse(), Ok(Backend::Cpu));
    assert_eq!("plan".parse(), Ok(Backend::Plan));
    let e = "cuda".parse::<Backend>().unwrap_err();
    assert!(
        e.contains("cuda") && e.contains("auto, wgpu, cpu or plan"),
        "{e}"
    );
}

#[test]
fn the_default_card_is_the_lessons() {
    let dev = Device::new(&DeviceOptions {
        backend: Backend::Plan,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(dev.capacity(), Some(crate::lesson::CARD_BYTES));
    assert_eq!(
        crate::size::format_bytes(dev.capacity().unwrap()),
        "15.90 GiB"
    );
}

#[test]
fn plan_needs_a_size() {
    let e = Device::new(&DeviceOptions {
        backend: Backend::Plan,
        memory: MemorySpec::Native,
        ..Default::default()
    })
    .unwrap_err();
    assert!(matches!(e, Error::PlanNeedsCapacity), "{e}");
    assert!(
        e.to_string().contains("give the device memory as a size"),
        "{e}"
    );
}

#[test]
fn bad_allocator_settings_are_errors() {
    let e = Device::new(&DeviceOptions {
        backend: Backend::Cpu,
        allocator: AllocatorConfig {
            gc_threshold: Some(1.5),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    assert!(e.to_string().contains("between 0 and 1"), "{e}");
}

#[test]
fn auto_explains_its_choice() {
    let dev = Device::new(&DeviceOptions::default()).unwrap();
    let info = dev.info();
    assert!(info.reason.starts_with("auto:"), "{}", info.reason);
    assert!(matches!(info.backend, Backend::Cpu | Backend::Wgpu));
}

#[test]
fn tensors_free_their_block_on_drop() {
    let dev = Device::cpu(64 * MIB);
    let a = Tensor::new(&dev, 100, 100, DType::F32, crate::Role::Temporary, "a").unwrap();
    assert_eq!(dev.memory_allocated(), 40_448); // 40 000 rounded up to 512
    drop(a);
    assert_eq!(dev.memory_allocated(), 0);
    assert_eq!(dev.memory_reserved(), 2 * MIB, "the segment stays cached");
    dev.empty_cache();
    assert_eq!(dev.memory_reserved(), 0);
}

#[test]
fn cpu_tensors_hold_data_and_plan_tensors_do_not() {
    let dev = Device::cpu(64 * MIB);
    let t = Tensor::new(&dev, 3, 5, DType::F32, crate::Role::Temporary, "t").unwrap();
    let data: Vec<f32> = (0..15).map(|i| i as f32 * 0.5).collect();
    t.write(&data).unwrap();
    assert_eq!(t.read::<f32>().unwrap(), data);
    assert!(t.write(&data[..3]).is_err(), "wrong length");
    assert!(t.write(&[0f64; 15]).is_err(), "wrong element size");

    let plan = Device::plan(64 * MIB);
    let t = Tensor::new(&plan, 3, 5, DType::F32, crate::Role::Temporary, "t").unwrap();
    t.write(&data).unwrap();
    let e = t.read::<f32>().unwrap_err();
    assert!(e.to_string().contains("planned"), "{e}");
}

#[test]
fn bad_shapes_are_errors_not_panics() {
    let dev = Device::plan(64 * MIB);
    assert!(Tensor::new(&dev, 0, 5, DType::F32, crate::Role::Temporary, "z").is_err());
    let e = Tensor::new(
        &dev,
        u64::MAX / 2,
        5,
        DType::F32,
        crate::Role::Temporary,
        "huge",
    )
    .unwrap_err();
    assert!(e.to_string().contains("64 bits"), "{e}");
    // 4 EiB is a valid size, just not on this card.
    let e = Tensor::new(
        &dev,
        1 << 40,
        1 << 20,
        DType::F32,
        crate::Role::Temporary,
        "huge",
    )
    .unwrap_err();
    assert_eq!(e.as_oom().map(|o| o.requested), Some(1 << 62), "{e}");
}

#[test]
fn out_of_memory_names_the_device_and_the_figures() {
    let dev = Device::plan(crate::lesson::CARD_BYTES);
    let _a = Tensor::new(
        &dev,
        1_173_000,
        2000,
        DType::F32,
        crate::Role::Temporary,
        "z1",
    )
    .unwrap();
    let e = Tensor::new(
        &dev,
        1_173_000,
        2000,
        DType::F32,
        crate::Role::Temporary,
        "a1",
    )
    .unwrap_err();
    let oom = e.as_oom().expect("out of memory");
    assert_eq!(oom.label, "a1");
    let msg = e.to_string();
    assert!(
        msg.starts_with("out of memory. Tried to allocate 8.74 GiB (plan device 0; 15.90 GiB total capacity; 8.74 GiB already allocated;"),
        "{msg}"
    );
}

/// One scripted sequence of tensors on a device, returning the trace.
fn scripted(dev: &Device) -> crate::alloc::Trace {
    dev.start_trace();
    let mut keep = Vec::new();
    for (i, rows) in [1u64, 300, 5000, 70_000, 12, 700_000]
        .into_iter()
        .enumerate()
    {
        let t = Tensor::new(
            dev,
            rows,
            4,
            DType::F32,
            crate::Role::Temporary,
            &format!("t{i}"),
        )
        .unwrap();
        if i % 2 == 0 {
            keep.push(t);
        }
    }
    keep.remove(1);
    dev.empty_cache();
    let _late = Tensor::new(dev, 2000, 2000, DType::F32, crate::Role::Temporary, "late").unwrap();
    drop(keep);
    dev.take_trace()
}

#[test]
fn the_trace_is_the_same_on_every_backing() {
    let plan = scripted(&Device::plan(256 * MIB));
    let cpu = scripted(&Device::cpu(256 * MIB));
    assert_eq!(plan, cpu);
    assert!(plan.count(EventKind::SegmentFree) > 0);
    if let Some(dev) = wgpu_device(MemorySpec::Bytes(256 * MIB)) {
        assert_eq!(plan, scripted(&dev));
    }
}

#[test]
fn wgpu_buffers_match_the_drivers_report() {
    let Some(gpu) = test_gpu() else {
        return;
    };
    if skip_on_gl(gpu.gpu(), "GL has no allocator report to compare with") {
        return;
    }
    let dev = gpu.device(MemorySpec::Bytes(1 << 30));
    let before = dev.driver_memory().expect("Vulkan reports its allocator");
    assert_eq!(before.segments, 0);
    let a = Tensor::new(&dev, 1000, 1000, DType::F32, crate::Role::Temporary, "a").unwrap(); // 20 MiB segment
    let _b = Tensor::new(&dev, 3000, 3000, DType::F32, crate::Role::Temporary, "b").unwrap(); // 36 MB -> 36 MiB? see below
    let _c = Tensor::new(&dev, 10, 10, DType::F32, crate::Role::Temporary, "c").unwrap(); // 2 MiB small segment
    let report = dev.driver_memory().unwrap();
    // The driver holds our segments (each buffer padded by at most its memory alignment,
    // 256 B), plus wgpu's own internal buffers.
    assert_eq!(report.buffers, 3);
    let padding = report.segments - dev.memory_reserved();
    assert!(
        padding <= 256 * report.buffers,
        "driver padding {padding} B"
    );
    let internal = report.allocated - report.segments;
    assert_eq!(
        internal, before.allocated,
        "wgpu's own buffers are unchanged"
    );
    assert!(internal < 4 * MIB, "wgpu's own buffers: {internal} bytes");
    drop(a);
    dev.empty_cache();
    let after = dev.driver_memory().unwrap();
    assert_eq!(after.buffers, 2);
    assert!(after.segments - dev.memory_reserved() <= 256 * after.buffers);
}

#[test]
fn wgpu_segments_larger_than_a_buffer_are_split_into_buffers() {
    let Some(gpu) = test_gpu() else {
        return;
    };
    // Buffers of at most 1 MiB + 512 B: a 6 MB tensor spans several buffers, at offsets
    // that do not line up with its rows.
    let dev = wgpu_device_on(
        Rc::clone(gpu.gpu()),
        MemorySpec::Bytes(1 << 30),
        Some(MIB + 512),
    )
    .unwrap();
    let _pad = Tensor::new(&dev, 3, 700_001, DType::F32, crate::Role::Temporary, "pad").unwrap();
    let t = Tensor::new(&dev, 1001, 1499, DType::F32, crate::Role::Temporary, "t").unwrap();
    let data: Vec<f32> = (0..t.len()).map(|i| (i % 9973) as f32).collect();
    t.write(&data).unwrap();
    assert_eq!(t.read::<f32>().unwrap(), data);
    let h = Tensor::new(&dev, 3, 3, DType::F16, crate::Role::Temporary, "odd f16").unwrap();
    let halves: Vec<u16> = (1..=9).collect();
    h.write(&halves).unwrap();
    assert_eq!(h.read::<u16>().unwrap(), halves);
}

/// Run in a child process under `ulimit -v` (see `driver_out_of_memory_is_a_value`).
#[test]
fn child_exhausts_native_memory() {
    if std::env::var("GPUMEM_OOM_CHILD").is_err() {
        return;
    }
    let backend: Backend = std::env::var("GPUMEM_OOM_CHILD").unwrap().parse().unwrap();
    let dev = Device::new(&DeviceOptions {
        backend,
        memory: MemorySpec::Native,
        ..Default::default()
    })
    .unwrap();
    let mut keep = Vec::new();
    for i in 0..10_000 {
        match Tensor::new(
            &dev,
            64 << 20,
            1,
            DType::F32,
            crate::Role::Temporary,
            &format!("chunk{i}"),
        ) {
            Ok(t) => keep.push(t),
            Err(e) => {
                let oom = e.as_oom().expect("an out-of-memory error value");
                assert!(matches!(oom.cause, crate::alloc::OomCause::Backing(_)));
                println!("CHILD-OOM after {} chunks: {e}", keep.len());
                return;
            }
        }
    }
    panic!("never ran out");
}

fn run_child_under_ulimit(backend: &str, kib: u64) -> String {
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v {kib} && exec \"$0\" --exact device::tests::child_exhausts_native_memory --nocapture --test-threads 1"
        ))
        .arg(exe)
        .env("GPUMEM_OOM_CHILD", backend)
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "child failed:\n{text}");
    text
}

#[test]
fn host_out_of_memory_is_a_value() {
    let text = run_child_under_ulimit("cpu", 2 << 20);
    assert!(text.contains("CHILD-OOM"), "{text}");
    assert!(text.contains("Tried to allocate 256.00 MiB"), "{text}");
    assert!(
        text.contains("host allocation of 256.00 MiB failed"),
        "{text}"
    );
}

#[test]
fn driver_out_of_memory_is_a_value() {
    let Some(gpu) = gpumem_kernels::testing::gpu() else {
        return;
    };
    if skip_on_gl(&gpu, "needs a real out-of-memory, which GL never reports") {
        return;
    }
    drop(gpu);
    let text = run_child_under_ulimit("wgpu", 3 << 20);
    assert!(text.contains("CHILD-OOM"), "{text}");
    assert!(text.contains("wgpu could not create a buffer"), "{text}");
    assert!(text.contains("unknown total capacity"), "{text}");
}
