//! Both sentences against PyTorch's own, rebuilt here from the pieces its source concatenates
//! (`c10/cuda/CUDACachingAllocator.cpp`), with the three substitutions the module documents.

use super::*;

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// PyTorch's `format_size`, as the source writes it.
fn format_size(size: u64) -> String {
    if size <= 1024 {
        format!("{size} bytes")
    } else if size <= 1_048_576 {
        format!("{:.2} KiB", size as f64 / 1024.0)
    } else if size <= 1_073_741_824 {
        format!("{:.2} MiB", size as f64 / 1_048_576.0)
    } else {
        format!("{:.2} GiB", size as f64 / 1_073_741_824.0)
    }
}

/// PyTorch ≤ 2.0's pieces, in order.
fn pytorch_lesson(o: &OutOfMemory, allowed_info: &str) -> String {
    [
        "CUDA out of memory. Tried to allocate ",
        &format_size(o.tried),
        " (GPU ",
        "0",
        "; ",
        &format_size(o.capacity.unwrap()),
        " total capacity; ",
        &format_size(o.allocated),
        " already allocated; ",
        &format_size(o.free.unwrap()),
        " free; ",
        allowed_info,
        &format_size(o.reserved),
        " reserved in total by PyTorch)",
        " If reserved memory is >> allocated memory try setting max_split_size_mb to avoid",
        " fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF",
        "",
    ]
    .concat()
}

/// Today's pieces, in order, with NVML's line for this process alone and no private pools.
fn pytorch_current(o: &OutOfMemory, process: u64, allowed_info: &str) -> String {
    let proc_info = format!(
        "Including non-PyTorch memory, this process has {} memory in use. ",
        format_size(process)
    );
    [
        "CUDA out of memory. Tried to allocate ",
        &format_size(o.tried),
        ". GPU ",
        "0",
        " has a total capacity of ",
        &format_size(o.capacity.unwrap()),
        " of which ",
        &format_size(o.free.unwrap()),
        " is free. ",
        &proc_info,
        allowed_info,
        "Of the allocated memory ",
        &format_size(o.allocated),
        " is allocated by PyTorch, ",
        "and ",
        &format_size(o.reserved - o.allocated),
        " is reserved by PyTorch but unallocated.",
        " If reserved but unallocated memory is large try setting",
        " PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid",
        " fragmentation.  See documentation for Memory Management ",
        " (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)",
    ]
    .concat()
}

/// PyTorch's sentence as the engine words it: no CUDA, the device by name, gpumem for PyTorch.
fn ours(pytorch: &str, device: &str) -> String {
    pytorch
        .replacen("CUDA out of memory", "out of memory", 1)
        .replacen("GPU 0", device, 1)
        .replace("PyTorch", "gpumem")
}

fn lesson_like() -> OutOfMemory {
    OutOfMemory {
        label: "a0".into(),
        requested: 9_384_000_000,
        tried: 9_384_000_000u64.next_multiple_of(2 * MIB),
        capacity: Some(16_282 * MIB),
        allocated: 9_405_000_000,
        reserved: 9_407_000_000,
        free: Some(16_282 * MIB - 9_407_000_000 - 773 * MIB),
        allowed: None,
        context_memory: 773 * MIB,
        device: "plan device 0".into(),
        cause: OomCause::Capacity,
        message: OomMessage::Lesson,
    }
}

#[test]
fn the_lesson_form_is_pytorchs_sentence() {
    let o = lesson_like();
    let text = o.to_string();
    let first = text.lines().next().unwrap();
    assert_eq!(first, ours(&pytorch_lesson(&o, ""), "plan device 0"));
    assert!(
        first.starts_with("out of memory. Tried to allocate 8.74 GiB (plan device 0; 15.90 GiB"),
        "{first}"
    );
    // The engine's advice follows on its own lines.
    assert!(
        text.lines().nth(1).unwrap().starts_with("  To fit:"),
        "{text}"
    );
}

#[test]
fn the_current_form_is_todays_sentence() {
    let o = lesson_like().with_message(OomMessage::Current);
    let text = o.to_string();
    let first = text.lines().next().unwrap();
    let process = o.reserved + o.context_memory;
    assert_eq!(
        first,
        ours(&pytorch_current(&o, process, ""), "plan device 0")
    );
    assert!(
        first.contains("this process has 9.52 GiB memory in use."),
        "{first}"
    );
    assert!(
        first.contains("and 1.91 MiB is reserved by gpumem but unallocated."),
        "{first}"
    );
}

#[test]
fn a_memory_fraction_adds_pytorchs_allowed_figure_to_both_forms() {
    let o = OutOfMemory {
        allowed: Some(12 * GIB),
        ..lesson_like()
    };
    let lesson = o.to_string();
    assert!(
        lesson.contains(" free; 12.00 GiB allowed; 8.76 GiB reserved"),
        "{lesson}"
    );
    assert_eq!(
        lesson.lines().next().unwrap(),
        ours(&pytorch_lesson(&o, "12.00 GiB allowed; "), "plan device 0")
    );
    let current = o.with_message(OomMessage::Current).to_string();
    assert_eq!(
        current.lines().next().unwrap(),
        ours(
            &pytorch_current(&o, o.process_in_use(), "12.00 GiB allowed; "),
            "plan device 0"
        )
    );
}

#[test]
fn small_figures_use_pytorchs_units() {
    let o = OutOfMemory {
        tried: 2 * MIB,
        capacity: Some(64 * MIB),
        allocated: 1024,
        reserved: 1025,
        free: Some(0),
        context_memory: 0,
        ..lesson_like()
    };
    let first = o.to_string().lines().next().unwrap().to_string();
    assert!(
        first.contains("(plan device 0; 64.00 MiB total capacity; 1024 bytes already allocated; 0 bytes free; 1.00 KiB reserved"),
        "{first}"
    );
}

#[test]
fn the_engine_lines_follow_pytorchs_sentence() {
    let o = OutOfMemory {
        requested: 10 * MIB,
        // 10 MiB and up is rounded to 2 MiB: the segment it tries is the request.
        tried: 10 * MIB,
        allocated: 10 * MIB,
        reserved: 40 * MIB,
        cause: OomCause::Backing("driver: out of device memory".into()),
        ..lesson_like()
    };
    for form in [OomMessage::Lesson, OomMessage::Current] {
        let text = o.with_message(form).to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].ends_with(if form == OomMessage::Lesson {
            LESSON_ADVICE
        } else {
            CURRENT_ADVICE
        }));
        assert_eq!(
            lines[1],
            "  the device refused: driver: out of device memory"
        );
        assert!(lines[2].contains("The cache is fragmented"), "{text}");
        assert!(lines[3].starts_with("  To fit:"), "{text}");
    }
}

#[test]
fn the_form_parses_and_refuses_clearly() {
    assert_eq!("lesson".parse(), Ok(OomMessage::Lesson));
    assert_eq!(" Current ".parse(), Ok(OomMessage::Current));
    let e = "2.0".parse::<OomMessage>().unwrap_err();
    assert!(e.contains("lesson") && e.contains("current"), "{e}");
    assert_eq!(OomMessage::default().to_string(), "lesson");
}

#[test]
fn older_json_without_the_new_fields_still_reads() {
    let mut v = serde_json::to_value(lesson_like()).unwrap();
    let m = v.as_object_mut().unwrap();
    for k in ["allowed", "context_memory", "message"] {
        m.remove(k);
    }
    let o: OutOfMemory = serde_json::from_value(v).unwrap();
    assert_eq!(
        (o.message, o.context_memory, o.allowed),
        (OomMessage::Lesson, 0, None)
    );
}

#[test]
fn the_pytorch_sentence_is_pytorchs_own_in_both_forms() {
    let o = lesson_like();
    assert_eq!(o.pytorch_sentence(), pytorch_lesson(&o, ""));
    let c = o.with_message(OomMessage::Current);
    assert_eq!(
        c.pytorch_sentence(),
        pytorch_current(&c, c.reserved + c.context_memory, "")
    );
    // The engine's own names stay out of PyTorch's sentence.
    for s in [o.pytorch_sentence(), c.pytorch_sentence()] {
        assert!(!s.contains("gpumem") && !s.contains("plan device"), "{s}");
        assert!(!s.contains('\n'), "{s}");
    }
}
