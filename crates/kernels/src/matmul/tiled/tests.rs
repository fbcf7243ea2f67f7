//! The generator against its committed output, and what every variant must contain.

use std::path::{Path, PathBuf};

use super::*;
use crate::variants::{BLESS_ENV, bless, engine_tiled_specs};

/// Where the committed variants live, relative to the crate.
const GENERATED: &str = "src/matmul/generated";

fn generated_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(GENERATED)
}

/// `tiled-plain-f32-f32-f32-f32.wgsl`: the variant, then a, b, c and bias's storage.
fn file_name(spec: Spec) -> String {
    format!("tiled-{}.wgsl", spec.key().replace('/', "-"))
}

/// Files in the generated folder that no committed variant makes.
fn orphans(dir: &Path, known: &[String]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = entries
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|name| !known.contains(name))
        .collect();
    out.sort();
    out
}

/// Every variant the engine requests is committed, byte for byte what the generator
/// writes today, and nothing else is in the folder; `GPUMEM_BLESS=1` rewrites them.
#[test]
fn generated_equals_committed() {
    let dir = generated_dir();
    let specs = engine_tiled_specs();
    let names: Vec<String> = specs.iter().map(|&s| file_name(s)).collect();
    let mut stale = Vec::new();
    for (&spec, name) in specs.iter().zip(&names) {
        let text = source(spec);
        match std::fs::read(dir.join(name)) {
            Ok(on_disk) if on_disk == text.as_bytes() => continue,
            Ok(_) => stale.push(format!("{name} (out of date)")),
            Err(_) => stale.push(format!("{name} (missing)")),
        }
        if bless() {
            std::fs::create_dir_all(&dir).expect("the generated folder can be created");
            std::fs::write(dir.join(name), text).expect("the generated folder is writable");
        }
    }
    for orphan in orphans(&dir, &names) {
        if bless() {
            std::fs::remove_file(dir.join(&orphan)).expect("an orphan can be removed");
        }
        stale.push(format!("{orphan} (no variant makes it)"));
    }
    assert!(
        stale.is_empty() || bless(),
        "{GENERATED} is not what the generator writes:\n  {}\nrun `{BLESS_ENV}=1 cargo test -p \
         gpumem-kernels tiled`, review the diff and commit {GENERATED}",
        stale.join("\n  ")
    );
}

#[test]
fn float32_and_half_sources_have_the_entry_points_and_only_the_needed_helpers() {
    for sub in [false, true] {
        let s = source(Spec::f32(sub));
        for e in ["fn mm_nn(", "fn mm_tn(", "fn mm_nt(", "fn tile_nt("] {
            assert!(s.contains(e), "{e}");
        }
        assert_eq!(s.contains("subgroupBroadcast"), sub);
        assert!(!s.contains("ldc(") && !s.contains("enable f16"));
    }
    let half = source(Spec {
        a: Store::F16,
        c: Store::F16Packed,
        ..Spec::f32(true)
    });
    assert!(half.starts_with("enable f16;\n"));
    assert!(half.contains("lda(ar0 + kk)") && half.contains("stc(at, v);"));
    assert!(half.contains("b[bc0 + kb + 0u * p.b_stride]"));
}

#[test]
fn the_committed_variants_are_distinct_files() {
    let specs = engine_tiled_specs();
    let mut names: Vec<String> = specs.iter().map(|&s| file_name(s)).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), specs.len());
    // float32, float64, and 7 mixed combinations each for native and packed float16.
    assert_eq!(specs.len(), 2 * (1 + 1 + 7 + 7));
}
