use super::*;

#[test]
fn versions_parse_as_torch_prints_them() {
    for (text, want) in [
        ("2.11", (2, 11)),
        ("2.11.0+cu130", (2, 11)),
        ("1.12.1", (1, 12)),
        ("v2.0", (2, 0)),
        ("2.15.0a0+git1234", (2, 15)),
        (" 2.8 ", (2, 8)),
    ] {
        assert_eq!(
            text.parse::<TorchVersion>(),
            Ok(TorchVersion::new(want.0, want.1)),
            "{text}"
        );
    }
}

#[test]
fn bad_versions_are_clear_errors() {
    for bad in [
        "",
        "2",
        "two.one",
        "2.",
        ".5",
        "2.x",
        "-2.1",
        "0.4",
        "2.11x",
        "99999999999.1",
    ] {
        let err = bad.parse::<TorchVersion>().unwrap_err();
        assert!(matches!(err, VersionError::NotAVersion(_)), "{bad}: {err}");
        assert!(err.to_string().contains("2.11"), "{err}");
    }
    let old = "1.11".parse::<TorchVersion>().unwrap_err();
    assert_eq!(old, VersionError::TooOld(TorchVersion::new(1, 11)));
    assert!(old.to_string().contains("1.12"), "{old}");
}

#[test]
fn capabilities_parse() {
    assert_eq!(
        "9.0".parse::<ComputeCapability>(),
        Ok(ComputeCapability { major: 9, minor: 0 })
    );
    assert_eq!(
        "12.1".parse::<ComputeCapability>().map(|c| c.to_string()),
        Ok("12.1".into())
    );
    for bad in ["", "9", "9.", "x.0", "0.0", "-8.0", "8.0.1", "1234.0"] {
        assert!(
            matches!(
                bad.parse::<ComputeCapability>(),
                Err(VersionError::NotACapability(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn the_table_is_ordered_and_each_row_changes_something() {
    for pair in KNOWN.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        assert!(a.version < b.version);
        let same = (
            a.workspaces,
            a.zero_grad,
            a.optimizer_impl,
            a.oom_message,
            a.exception,
        ) == (
            b.workspaces,
            b.zero_grad,
            b.optimizer_impl,
            b.oom_message,
            b.exception,
        );
        assert!(!same, "{} changes nothing after {}", b.version, a.version);
    }
}

#[test]
fn a_version_between_rows_takes_the_earlier_one_and_says_so() {
    let v = |s: &str| s.parse::<TorchVersion>().unwrap();
    assert_eq!(Rules::of(v("2.11")).release.version, v("2.8"));
    assert_eq!(Rules::of(v("2.7")).release.version, v("2.1"));
    assert_eq!(Rules::of(v("2.0")).release.version, v("2.0"));
    assert_eq!(Rules::of(v("3.2")).release.version, v("2.15"));
    assert_eq!(Rules::of(v("2.0")).note(), None);
    let note = Rules::of(v("2.11")).note().unwrap();
    assert!(
        note.contains("2.11") && note.contains("2.8") && note.contains("2.15"),
        "{note}"
    );
    assert!(Rules::of(v("3.2")).note().unwrap().contains("newest"));
}

/// Hand-computed workspaces: none through the allocator on 1.12; cuBLAS's 8,519,680 B and a
/// per-call cuBLASLt MiB on 1.13 and 2.0 before Hopper, 32 MiB on Hopper; 2.15 only
/// cuBLASLt's.
#[test]
fn workspaces_follow_the_version_and_the_card() {
    let v = |s: &str| Rules::of(s.parse().unwrap());
    let volta = DEFAULT_COMPUTE_CAPABILITY;
    let hopper = ComputeCapability { major: 9, minor: 0 };
    assert!(v("1.12").workspaces(volta).is_none());
    let w = v("1.13").workspaces(volta);
    assert_eq!((w.cublas, w.lt, w.lt_per_call), (8_519_680, 1 << 20, true));
    assert_eq!(v("2.0").workspaces(hopper).cublas, 32 << 20);
    let w = v("2.11").workspaces(volta);
    assert_eq!((w.cublas, w.lt, w.lt_per_call), (8_519_680, 1 << 20, false));
    let w = v("2.15").workspaces(hopper);
    assert_eq!((w.cublas, w.lt), (0, 1 << 20));
}

#[test]
fn the_lessons_pytorch_zeroes_and_loops() {
    let r = Rules::of(OLDEST).release;
    assert_eq!(
        (r.zero_grad, r.optimizer_impl, r.oom_message),
        (ZeroGrad::Zero, OptimizerImpl::ForLoop, OomMessage::Lesson)
    );
    assert!(Rules::of(OLDEST).describe().contains("zeroes"));
}

#[test]
fn the_minimum_split_follows_the_version() {
    use crate::alloc::MaxSplitMinimum;
    let at = max_split_minimum;
    assert_eq!(at(None), MaxSplitMinimum::AtLeast);
    assert_eq!(at(Some(TorchVersion::new(2, 9))), MaxSplitMinimum::AtLeast);
    assert_eq!(at(Some(TorchVersion::new(2, 8))), MaxSplitMinimum::MoreThan);
    assert_eq!(
        at(Some(TorchVersion::new(1, 12))),
        MaxSplitMinimum::MoreThan
    );
}
