//! The ways of splitting training over cards, by PyTorch's names where PyTorch has them.

use std::fmt;
use std::str::FromStr;

/// How the cards share the work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// `DistributedDataParallel`: every card holds the whole model, its gradients and the
    /// optimizer state; the batch is split; the gradient buckets are a second copy of the
    /// gradients.
    Ddp,
    /// `DistributedDataParallel(gradient_as_bucket_view=True)`: the gradients are views of
    /// the buckets, so there is one copy.
    DdpBucketView,
    /// ZeRO-1: `ZeroRedundancyOptimizer` over DDP with bucket views — each card keeps the
    /// optimizer state of the parameters it updates, and sends them to the others after.
    Zero1,
    /// ZeRO-2: `fully_shard(reshard_after_forward=False)` — parameters, gradients and
    /// state sharded at rest; each layer gathered in the forward pass stays whole until its
    /// backward (PyTorch's `SHARD_GRAD_OP`).
    Zero2,
    /// ZeRO-3: `fully_shard` (FSDP2) — each layer gathered when it runs and freed after,
    /// gathered again in the backward pass.
    Zero3,
    /// Pipeline parallel, `ScheduleGPipe`: the layers split into one stage per card, every
    /// micro-batch forward, then every one backward.
    PipelineGpipe,
    /// Pipeline parallel, `Schedule1F1B`: backward passes start as soon as they can.
    Pipeline1f1b,
}

impl Scheme {
    pub const ALL: [Scheme; 7] = [
        Scheme::Ddp,
        Scheme::DdpBucketView,
        Scheme::Zero1,
        Scheme::Zero2,
        Scheme::Zero3,
        Scheme::PipelineGpipe,
        Scheme::Pipeline1f1b,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Ddp => "ddp",
            Scheme::DdpBucketView => "ddp-bucket-view",
            Scheme::Zero1 => "zero1",
            Scheme::Zero2 => "zero2",
            Scheme::Zero3 => "zero3",
            Scheme::PipelineGpipe => "pipeline-gpipe",
            Scheme::Pipeline1f1b => "pipeline-1f1b",
        }
    }

    /// What PyTorch calls it.
    pub fn pytorch(self) -> &'static str {
        match self {
            Scheme::Ddp => "DistributedDataParallel(model)",
            Scheme::DdpBucketView => "DistributedDataParallel(model, gradient_as_bucket_view=True)",
            Scheme::Zero1 => "ZeroRedundancyOptimizer + DDP(gradient_as_bucket_view=True)",
            Scheme::Zero2 => "fully_shard(layer, reshard_after_forward=False)",
            Scheme::Zero3 => "fully_shard(layer)",
            Scheme::PipelineGpipe => "ScheduleGPipe(PipelineStage(stage, …), n_microbatches)",
            Scheme::Pipeline1f1b => "Schedule1F1B(PipelineStage(stage, …), n_microbatches)",
        }
    }

    /// Whether parameters, gradients and optimizer state are sharded (FSDP).
    pub(crate) fn shards_parameters(self) -> bool {
        matches!(self, Scheme::Zero2 | Scheme::Zero3)
    }

    /// The pipeline schedule, for the pipeline schemes.
    pub fn pipeline(self) -> Option<super::pipeline::Schedule> {
        use super::pipeline::Schedule;
        match self {
            Scheme::PipelineGpipe => Some(Schedule::GPipe),
            Scheme::Pipeline1f1b => Some(Schedule::OneFOneB),
            _ => None,
        }
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

impl FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted = s.trim().to_ascii_lowercase().replace('_', "-");
        let alias = match wanted.as_str() {
            "fsdp" => "zero3",
            "ddp-view" => "ddp-bucket-view",
            "gpipe" => "pipeline-gpipe",
            "1f1b" => "pipeline-1f1b",
            other => other,
        };
        Scheme::ALL
            .into_iter()
            .find(|k| k.name() == alias)
            .ok_or_else(|| {
                let names: Vec<&str> = Scheme::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown scheme `{s}` (one of: {}; `fsdp` is zero3)",
                    names.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::Scheme;

    #[test]
    fn names_round_trip_and_unknown_ones_are_refused() {
        for s in Scheme::ALL {
            assert_eq!(s.name().parse::<Scheme>(), Ok(s));
        }
        assert_eq!("FSDP".parse::<Scheme>(), Ok(Scheme::Zero3));
        let err = "pipeline-ish".parse::<Scheme>().unwrap_err();
        assert!(err.contains("unknown scheme `pipeline-ish`"), "{err}");
    }
}
