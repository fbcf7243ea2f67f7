use super::*;
use crate::card_args::parse_context_memory;
use gpumem::versions::{ComputeCapability, TorchVersion};

#[test]
fn positive_numbers_explain_themselves() {
    assert_eq!(parse_positive("5000"), Ok(5000));
    assert!(parse_positive("0").unwrap_err().contains("at least 1"));
    assert!(parse_positive("-1").unwrap_err().contains("at least 1"));
    assert!(
        parse_positive("99999999999999999999")
            .unwrap_err()
            .contains("too large")
    );
    assert!(
        parse_positive("ten")
            .unwrap_err()
            .contains("not a whole number")
    );
    assert!(parse_lr("0").is_err());
    assert!(parse_lr("nan").is_err());
    assert!(parse_lr("inf").is_err());
    assert_eq!(parse_lr("0.01"), Ok(0.01));
    assert!(parse_momentum("-0.5").unwrap_err().contains("at least 0"));
    assert!(parse_momentum("nan").unwrap_err().contains("finite"));
    assert!(parse_momentum("fast").unwrap_err().contains("not a number"));
    assert_eq!(parse_momentum("0.9"), Ok(0.9));
    let e = parse_optimizer_impl("vectorised").unwrap_err();
    assert!(e.contains("foreach, for-loop or fused"), "{e}");
    assert_eq!(parse_optimizer_impl("fused"), Ok(OptimizerImpl::Fused));
    assert!(
        parse_zero_grad("maybe")
            .unwrap_err()
            .contains("none or zero")
    );
    assert_eq!(parse_zero_grad("zero"), Ok(ZeroGrad::Zero));
    assert_eq!(parse_context_memory("0.72GiB"), Ok(773_094_113));
    assert!(
        parse_context_memory("-1GiB")
            .unwrap_err()
            .contains("cannot be negative")
    );
    let e = parse_oom_message("2.0").unwrap_err();
    assert!(e.contains("lesson") && e.contains("current"), "{e}");
}

#[test]
fn device_flags_reach_the_device_options() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
    }
    let parse = |args: &[&str]| {
        let all = std::iter::once("t").chain(args.iter().copied());
        Cli::try_parse_from(all)
            .unwrap()
            .device
            .options(Backend::Plan)
    };
    let o = parse(&["--context-memory", "1GiB", "--oom-message", "current"]);
    assert_eq!(
        (o.allocator.context_memory, o.oom_message),
        (1 << 30, OomMessage::Current)
    );
    let d = parse(&[]);
    assert_eq!(
        (d.allocator.context_memory, d.oom_message),
        (0, OomMessage::Lesson)
    );
    assert!(d.cublas.is_none());
    // The lesson's card: its outside memory, PyTorch 1.12's (no) workspaces, each flag
    // changing one.
    let l = parse(&["--card", "lesson"]);
    assert_eq!(l.allocator.context_memory, 773_094_113);
    assert!(l.cublas.is_none());
    // A version's workspaces on either card, sized by the compute capability.
    let t = parse(&["--card", "lesson", "--torch", "2.11.0+cu130"]);
    assert_eq!((t.cublas.cublas, t.cublas.lt), (8_519_680, 1 << 20));
    assert_eq!(t.oom_message, OomMessage::Current);
    let h = parse(&["--torch", "2.11", "--compute-capability", "9.0"]);
    assert_eq!(h.cublas.cublas, 32 << 20);
    let m = parse(&["--torch", "2.11", "--oom-message", "lesson"]);
    assert_eq!(m.oom_message, OomMessage::Lesson);
    let l = parse(&[
        "--card",
        "lesson",
        "--context-memory",
        "0",
        "--cublas-workspace",
        ":16:8",
    ]);
    assert_eq!((l.allocator.context_memory, l.cublas.cublas), (0, 131_072));
    assert!(
        parse(&["--card", "lesson", "--cublas-workspace", "off"])
            .cublas
            .is_none()
    );
    // On the ideal card a size means a workspace through the allocator, as
    // TORCH_CUBLAS_WORKSPACE_CACHE=1 does.
    let i = parse(&["--cublas-workspace", "8MiB"]);
    assert_eq!((i.cublas.cublas, i.cublas.lt), (8 << 20, 0));
    assert!(parse_cublas_workspace("0").unwrap_err().contains("off"));
    assert!(
        "big"
            .parse::<Card>()
            .unwrap_err()
            .contains("ideal or lesson")
    );
    let e = |s: &str| s.parse::<TorchVersion>().unwrap_err().to_string();
    assert!(e("1.9").contains("1.12"));
    assert!(e("latest").contains("2.11"));
    let cc = "H100".parse::<ComputeCapability>().unwrap_err();
    assert!(cc.to_string().contains("9.0"));
}

#[test]
fn the_version_sets_what_the_flags_leave_open() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
        #[command(flatten)]
        model: ModelArgs,
    }
    let config = |args: &[&str]| {
        let all = std::iter::once("t").chain(args.iter().copied());
        let cli = Cli::try_parse_from(all).unwrap();
        let c = cli.model.config(&cli.device);
        (c.strategy.zero_grad, c.strategy.optimizer_impl)
    };
    let modern = (ZeroGrad::SetToNone, OptimizerImpl::Foreach);
    let old = (ZeroGrad::Zero, OptimizerImpl::ForLoop);
    assert_eq!(config(&[]), modern);
    assert_eq!(config(&["--card", "lesson"]), old);
    assert_eq!(config(&["--torch", "1.13"]), old);
    assert_eq!(config(&["--card", "lesson", "--torch", "2.0"]), modern);
    assert_eq!(
        config(&["--card", "lesson", "--zero-grad", "none"]),
        (ZeroGrad::SetToNone, OptimizerImpl::ForLoop)
    );
    assert_eq!(
        config(&["--torch", "2.11", "--optimizer-impl", "for-loop"]),
        (ZeroGrad::SetToNone, OptimizerImpl::ForLoop)
    );
}

/// `--torch` also decides how many temporaries `foreach` Adam holds: 2.0's out-of-place
/// `denom` beside the square roots, 2.1's in place; without a version, PyTorch 2's newest.
#[test]
fn the_version_sets_foreach_adams_denominators() {
    use clap::Parser;
    use gpumem::mlp::ForeachDenom;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
        #[command(flatten)]
        model: ModelArgs,
    }
    let denom = |args: &[&str]| {
        let all = std::iter::once("t").chain(args.iter().copied());
        let cli = Cli::try_parse_from(all).unwrap();
        cli.model.config(&cli.device).strategy.foreach_denom
    };
    assert_eq!(denom(&[]), ForeachDenom::InPlace);
    assert_eq!(denom(&["--torch", "2.0"]), ForeachDenom::OutOfPlace);
    assert_eq!(
        denom(&["--torch", "2.0", "--optimizer-impl", "foreach"]),
        ForeachDenom::OutOfPlace
    );
    assert_eq!(denom(&["--torch", "2.1"]), ForeachDenom::InPlace);
    assert_eq!(denom(&["--card", "lesson"]), ForeachDenom::OutOfPlace);
}

#[test]
fn the_setup_holds_the_network_at_its_resolved_batch() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
        #[command(flatten)]
        model: ModelArgs,
    }
    let setup = |args: &[&str]| {
        let all = std::iter::once("t").chain(args.iter().copied());
        let cli = Cli::try_parse_from(all).unwrap();
        (cli.model.setup(&cli.device), cli.model.config(&cli.device))
    };
    let (s, config) = setup(&["--batch", "500", "--samples", "100", "--hidden", "64"]);
    let s = s.unwrap();
    assert_eq!((s.step.rows(), s.step.config()), (100, &config));
    assert!(s.notice.unwrap().contains("larger than the training set"));
    let (s, _) = setup(&["--batch", "full", "--samples", "100"]);
    assert_eq!(s.unwrap().step.rows(), 100);
    // The 64-bit bound is the engine's, checked here once.
    let (s, _) = setup(&["--batch", "full", "--samples", "18446744073709551615"]);
    assert!(s.unwrap_err().to_string().contains("64 bits"));
    assert_eq!(parse_count("7").map(NonZeroU64::get), Ok(7));
    assert!(parse_count("0").unwrap_err().contains("at least 1, got 0"));
}

/// `--device-memory`'s help names the card its default is on: `--card`'s default (ideal),
/// with the default size and what the lesson's card keeps outside the allocator.
#[test]
fn the_device_memory_help_names_the_default_card() {
    use clap::{CommandFactory, Parser};
    use gpumem::size::format_bytes;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        device: DeviceArgs,
    }
    let mut cmd = Cli::command();
    let card_default = cmd
        .get_arguments()
        .find(|a| a.get_id() == "card")
        .and_then(|a| a.get_default_values().first())
        .map(|v| v.to_string_lossy().into_owned())
        .expect("--card has a default");
    let help = cmd.render_long_help().to_string();
    let device_memory = help
        .split("--device-memory")
        .nth(1)
        .and_then(|rest| rest.split("\n      --").next())
        .expect("the help lists --device-memory");
    for words in [
        format!("--card {card_default}"),
        format_bytes(gpumem::lesson::CARD_BYTES),
        // In GiB, as the lesson's message and --card's help give it.
        format!(
            "{:.2} GiB",
            Card::Lesson.outside() as f64 / f64::from(1u32 << 30)
        ),
    ] {
        assert!(
            device_memory.contains(&words),
            "lacks {words}:{device_memory}"
        );
    }
}
