//! Every file `figures` generates, in the order it writes them.

use crate::{charts, pages};
use anyhow::Result;

/// One generated file.
#[derive(Debug)]
pub struct Artifact {
    /// Where it goes, relative to the book's `src/` folder.
    pub path: &'static str,
    /// What it shows, in a few words (printed when written).
    pub about: &'static str,
    /// Its contents.
    pub render: fn() -> Result<String>,
}

/// Every generated file, charts first.
pub const ARTIFACTS: &[Artifact] = &[
    Artifact {
        path: "figures/memory_vs_batch.svg",
        about: "peak memory of one step vs batch size (1 row to the full set), stacked by category, measured points, capacity",
        render: charts::memory_vs_batch,
    },
    Artifact {
        path: "figures/memory_vs_batch_log.svg",
        about: "the same step on log-log axes: the model's own memory, activations + temporaries, the batch, where the batch passes the model",
        render: charts::memory_vs_batch_log,
    },
    Artifact {
        path: "figures/memory_vs_batch_reserved.svg",
        about: "the batch chart with the peak reserved beside the stack: where the cache fragments past the largest batch that fits",
        render: charts::memory_vs_batch_reserved,
    },
    Artifact {
        path: "figures/memory_vs_width.svg",
        about: "peak memory vs hidden width at batch 32 for 1, 3 and 5 hidden layers, capacity",
        render: charts::memory_vs_width,
    },
    Artifact {
        path: "figures/memory_vs_depth.svg",
        about: "peak allocated and reserved vs depth at width 5000, batch 32, SGD and Adam, deepest fit",
        render: charts::memory_vs_depth,
    },
    Artifact {
        path: "figures/alloc_timeline.svg",
        about: "allocated and reserved after every allocator event over model creation and 3 steps",
        render: charts::alloc_timeline,
    },
    Artifact {
        path: "figures/leak_timeline.svg",
        about: "challenge 3: allocated and reserved over every event of the leaking loop, epoch by epoch, to its out-of-memory",
        render: charts::leak_timeline,
    },
    Artifact {
        path: "figures/step_tensor_timeline.svg",
        about: "the same run tensor by tensor, from its memory snapshot: each live tensor a named band (memory_viz's Active Memory Timeline)",
        render: crate::snapshots::step_tensor_timeline,
    },
    Artifact {
        path: "figures/fragmentation_tensor_timeline.svg",
        about: "challenge 3: the fragmentation run tensor by tensor, from the snapshot taken at its out-of-memory",
        render: crate::snapshots::fragmentation_tensor_timeline,
    },
    Artifact {
        path: "figures/challenge4_strategies.svg",
        about: "challenge 4: each strategy's planned peak vs the card, and its measured time vs the plain step (cpu, wgpu)",
        render: charts::strategies::challenge4_strategies,
    },
    Artifact {
        path: "figures/challenge4_deep.svg",
        about: "challenge 4 with 9 hidden layers: the same, where checkpointing has layers to drop (cpu)",
        render: charts::strategies::challenge4_deep,
    },
    Artifact {
        path: "figures/per_card.svg",
        about: "more than one card: the fullest card by category vs 1, 2, 4, 8 cards, one panel per scheme, capacity",
        render: charts::per_card::per_card,
    },
    Artifact {
        path: "generated/core_equation.md",
        about: "the core's memory equation: the formula the graders are checked against, its symbols, a worked example at 100 000 rows",
        render: pages::core_equation::core_equation,
    },
    Artifact {
        path: "generated/estimate_table.md",
        about: "table: the equation's peak vs the measured peak for every reference setup",
        render: pages::memory_equation::estimate_table,
    },
    Artifact {
        path: "generated/pytorch_fixture.md",
        about: "paragraph: the engine's peak of requested bytes against PyTorch's on every setup of its fixture",
        render: pages::memory_equation::pytorch_fixture,
    },
    Artifact {
        path: "generated/step_tape.md",
        about: "table: step 2 of a small lesson-shaped network, tensor by tensor, the engine's trace beside PyTorch's",
        render: pages::memory_equation::step_tape,
    },
    Artifact {
        path: "generated/relu_inplace.md",
        about: "table: nn.ReLU() vs nn.ReLU(inplace=True) on the lesson's card, and PyTorch's own peaks",
        render: pages::fitting_more::relu_inplace,
    },
    Artifact {
        path: "generated/accumulation_cost.md",
        about: "inline: what accumulating into live gradients adds to the peak of challenge 4's deeper network (the equation)",
        render: pages::fitting_more::accumulation_cost,
    },
    Artifact {
        path: "generated/deepest_adam_fused.md",
        about: "inline: the deepest network of width 5000 at batch 32 on the card with Adam(fused=True)",
        render: pages::fitting_more::deepest_adam_fused,
    },
    Artifact {
        path: "generated/deepest_adam_forloop.md",
        about: "inline: the same with Adam(foreach=False)",
        render: pages::fitting_more::deepest_adam_forloop,
    },
    Artifact {
        path: "generated/challenge4_fewer.md",
        about: "inline: the full batch in float32 with one micro-batch fewer than it needs, and why it fails",
        render: pages::challenge_4::challenge4_fewer,
    },
    Artifact {
        path: "generated/full_batch_failure.md",
        about: "inline: where the full batch runs out on the card (the pass) and on which tensor",
        render: pages::challenge_1::full_batch_failure,
    },
    Artifact {
        path: "generated/deepest_sgd_failure.md",
        about: "inline: where one layer too many (width 5000, batch 32, SGD) runs out, and on which tensor",
        render: pages::challenge_2::deepest_sgd_failure,
    },
    Artifact {
        path: "generated/deepest_adam_failure.md",
        about: "inline: where one layer too many (width 5000, batch 32, Adam) runs out, and on which tensor",
        render: pages::challenge_2::deepest_adam_failure,
    },
    Artifact {
        path: "generated/challenge1_full_batch.md",
        about: "challenge 1: the full training set as one batch, by category, the OOM, the largest batch",
        render: pages::challenge_1::challenge1_full_batch,
    },
    Artifact {
        path: "generated/challenge2_depth.md",
        about: "challenge 2: the deepest network that fits (width 5000, batch 32), SGD and Adam, vs the equation",
        render: pages::challenge_2::challenge2_depth,
    },
    Artifact {
        path: "generated/widest_on_card.md",
        about: "table: the widest hidden layers that fit at batch 32 for 1, 3 and 5 layers",
        render: pages::networks::widest_on_card,
    },
    Artifact {
        path: "generated/figure_alts.md",
        about: "list: every figure's alt text",
        render: pages::figure_alts,
    },
    Artifact {
        path: "generated/alt_per_card.md",
        about: "inline: alt text of per_card.svg",
        render: charts::per_card::alt_per_card,
    },
    Artifact {
        path: "generated/per_card_table.md",
        about: "table: each scheme's fullest card on 1, 2, 4, 8 cards (Adam, one layer too deep for one card), fits, fewest cards",
        render: pages::more_than_one_card::per_card_table,
    },
    Artifact {
        path: "generated/per_card_categories.md",
        about: "table: on the most cards, each scheme's fullest card by category at its peak, and the bytes it sends",
        render: pages::more_than_one_card::categories_table,
    },
    Artifact {
        path: "generated/deepspeed_table.md",
        about: "table: DeepSpeed's ZeRO-2/ZeRO-3 estimators beside the engine's fullest card, mixed precision, two batches",
        render: pages::deepspeed::deepspeed_table,
    },
    Artifact {
        path: "generated/deepspeed_notes.md",
        about: "paragraph: where DeepSpeed's ZeRO-3 figure and the engine's part on 8 cards",
        render: pages::deepspeed::deepspeed_notes,
    },
    Artifact {
        path: "generated/parallel_fixture.md",
        about: "paragraph: the engine's per-card peaks against PyTorch's parallel and pipeline fixtures",
        render: pages::parallel_fixture::parallel_fixture,
    },
    Artifact {
        path: "generated/per_card_setup.md",
        about: "inline: the multi-card page's network (Challenge 2's, one layer too deep with Adam)",
        render: pages::more_than_one_card::setup_inline,
    },
    Artifact {
        path: "generated/pipeline_micro_batches.md",
        about: "inline: micro-batches per pipeline stage",
        render: pages::more_than_one_card::micro_batches_inline,
    },
    Artifact {
        path: "generated/backward_cost.md",
        about: "inline: the bubble model's backward pass, in forward passes (a modelling choice)",
        render: || Ok(gpumem::parallel::BACKWARD_COST.to_string()),
    },
    Artifact {
        path: "generated/pipeline_bubble.md",
        about: "inline: the pipelines' bubble (idle share of a step) on each group size, from the schedule in unit times",
        render: pages::more_than_one_card::bubble_inline,
    },
    Artifact {
        path: "generated/ddp_twice.md",
        about: "inline: DDP's gradients and buckets on the fullest card of 8",
        render: pages::more_than_one_card::ddp_twice,
    },
    Artifact {
        path: "generated/deepspeed_large_batch.md",
        about: "inline: the large batch of the DeepSpeed comparison",
        render: || Ok(crate::style::grouped(pages::deepspeed::LARGE_BATCH)),
    },
    Artifact {
        path: "generated/alt_memory_vs_batch.md",
        about: "inline: alt text of memory_vs_batch.svg",
        render: charts::batch::alt_memory_vs_batch,
    },
    Artifact {
        path: "generated/alt_memory_vs_batch_log.md",
        about: "inline: alt text of memory_vs_batch_log.svg",
        render: charts::batch_log::alt_memory_vs_batch_log,
    },
    Artifact {
        path: "generated/alt_memory_vs_batch_reserved.md",
        about: "inline: alt text of memory_vs_batch_reserved.svg",
        render: charts::batch::alt_memory_vs_batch_reserved,
    },
    Artifact {
        path: "generated/batch_passes_model.md",
        about: "inline: the fewest rows at which the lesson network's activations and temporaries pass the model's own memory (SGD)",
        render: charts::batch_log::crossover_inline,
    },
    Artifact {
        path: "generated/alt_leak_timeline.md",
        about: "inline: alt text of leak_timeline.svg",
        render: charts::timeline::alt_leak_timeline,
    },
    Artifact {
        path: "generated/alt_challenge4_strategies.md",
        about: "inline: alt text of challenge4_strategies.svg",
        render: || charts::strategies::alt(0),
    },
    Artifact {
        path: "generated/alt_challenge4_deep.md",
        about: "inline: alt text of challenge4_deep.svg",
        render: || charts::strategies::alt(1),
    },
    Artifact {
        path: "generated/challenge4_times.md",
        about: "challenge 4: the recorded times of every strategy (machine, date, command), from `figures -- --measure`",
        render: pages::challenge_4::challenge4_times,
    },
    Artifact {
        path: "generated/demo_times.md",
        about: "table: the instructors' commands, timed by `figures -- --measure` (machine, date)",
        render: pages::instructors::demo_times,
    },
    Artifact {
        path: "generated/alt_memory_vs_width.md",
        about: "inline: alt text of memory_vs_width.svg",
        render: || Ok(charts::width::alt_memory_vs_width()),
    },
    Artifact {
        path: "generated/alt_memory_vs_depth.md",
        about: "inline: alt text of memory_vs_depth.svg",
        render: charts::depth::alt_memory_vs_depth,
    },
    Artifact {
        path: "generated/alt_step_tensor_timeline.md",
        about: "inline: alt text of step_tensor_timeline.svg",
        render: crate::snapshots::alt_step_tensor_timeline,
    },
    Artifact {
        path: "generated/alt_fragmentation_tensor_timeline.md",
        about: "inline: alt text of fragmentation_tensor_timeline.svg",
        render: crate::snapshots::alt_fragmentation_tensor_timeline,
    },
    Artifact {
        path: "generated/memviz_fragmentation.md",
        about: "block: what memviz prints for challenge 3's snapshot at its out-of-memory",
        render: crate::snapshots::fragmentation_memviz,
    },
    Artifact {
        path: "generated/gpu_h200_checked.md",
        about: "inline: the introduction's claim: the H200's real steps, replayed, give the card's peaks to the byte",
        render: pages::gpu_h200::checked,
    },
    Artifact {
        path: "generated/gpu_h200_models.md",
        about: "table: the recorder's models run for real on the H200 against the replays of their own snapshots and of the recorder's CPU recordings as that card",
        render: pages::gpu_h200::models_table,
    },
    Artifact {
        path: "generated/gpu_h200_allocations.md",
        about: "table: the recorder's recordings against the H200's own snapshots of the same steps, allocation by allocation",
        render: pages::gpu_h200_allocations::table,
    },
    Artifact {
        path: "generated/gpu_h200_challenge1.md",
        about: "table and message: challenge 1's largest batch on the ideal card, with workspaces, and PyTorch's on the H200; its failure at the ideal card's answer, replayed",
        render: pages::gpu_h200::challenge1_table,
    },
    Artifact {
        path: "generated/gpu_h200_workspaces.md",
        about: "paragraph: the workspaces the H200 freed after a step against the engine's plan for its PyTorch and card",
        render: pages::gpu_h200::workspaces,
    },
    Artifact {
        path: "generated/gpu_h200_untracked.md",
        about: "paragraph: part 1's setups on the H200, the engine (with the card's workspaces) against max_memory_allocated",
        render: pages::gpu_h200::untracked,
    },
    Artifact {
        path: "generated/own_model_replay.md",
        about: "the replay widget with the shipped recording, and its answer on the 16 GB card for readers without WebAssembly",
        render: pages::own_model::example_replay,
    },
    Artifact {
        path: "generated/own_model_largest.md",
        about: "inline: the recorded transformer's largest batch on a 16 GiB card",
        render: pages::own_model::example_largest,
    },
    Artifact {
        path: "generated/own_model_cards.md",
        about: "table: every recorded model replayed on 16 GiB and 80 GiB cards",
        render: pages::own_model::model_cards,
    },
    Artifact {
        path: "generated/own_model_whatifs.md",
        about: "table: the transformer at its largest 16 GiB batch under each what-if",
        render: pages::own_model::what_ifs,
    },
    Artifact {
        path: "generated/own_model_memtracker.md",
        about: "table: each recorded model's raw peak against its MemTracker run",
        render: pages::own_model::memtracker_table,
    },
    Artifact {
        path: "generated/own_model_lesson.md",
        about: "table: the lesson's answers from the recorder + replay and from the engine",
        render: pages::own_model::lesson_table,
    },
    Artifact {
        path: "generated/alt_alloc_timeline.md",
        about: "inline: alt text of alloc_timeline.svg",
        render: || Ok(charts::timeline::ALT_ALLOC_TIMELINE.to_string()),
    },
    Artifact {
        path: "generated/card_capacity.md",
        about: "inline: the card's capacity",
        render: pages::card_capacity,
    },
    Artifact {
        path: "generated/card_exact.md",
        about: "inline: the card's capacity exactly, in MiB and bytes",
        render: pages::card_exact,
    },
    Artifact {
        path: "generated/full_batch_peak.md",
        about: "inline: the equation's peak for the full training set as one batch",
        render: pages::memory_equation::full_batch_peak,
    },
    Artifact {
        path: "generated/full_batch_tried.md",
        about: "inline: what the full-batch step tried to allocate when it ran out",
        render: pages::memory_equation::full_batch_tried,
    },
    Artifact {
        path: "generated/cards_table.md",
        about: "the ideal card and the lesson's card side by side: what each holds besides tensors, largest batch, deepest networks",
        render: pages::cards::cards_table,
    },
    Artifact {
        path: "generated/largest_batch_lesson_card.md",
        about: "inline: the largest batch of the lesson's network on the lesson's card (rows)",
        render: pages::cards::largest_batch_lesson_card,
    },
    Artifact {
        path: "generated/lesson_card_compared.md",
        about: "inline: the lesson's card's largest batch and deepest networks against the ideal card's",
        render: pages::cards::lesson_card_compared,
    },
    Artifact {
        path: "generated/oom_exception.md",
        about: "inline: the out-of-memory exception's name and since which PyTorch each name holds",
        render: pages::monitoring::exception::phrase,
    },
    Artifact {
        path: "generated/monitoring_must_fit.md",
        about: "paragraph: a run whose reserved peak on a card without limit exceeds the smallest card it fits, found by the engine's search",
        render: pages::monitoring::must_fit::sentence,
    },
    Artifact {
        path: "generated/monitoring_memtracker.md",
        about: "paragraph: MemTracker's peak against CUDA's, from the committed records, the engine's workspace rules and its plan of the same step",
        render: pages::monitoring::memtracker::reconciled,
    },
    Artifact {
        path: "generated/monitoring_memtracker_engine.md",
        about: "clause: the engine's plan of memory_stats.py's step under the H200 record's PyTorch and card, against the card's peak",
        render: pages::monitoring::memtracker::engine_check,
    },
    Artifact {
        path: "generated/torch_versions.md",
        about: "table: PyTorch's versions as the engine knows them, what each changed by default, with sources",
        render: pages::cards::torch_versions,
    },
    Artifact {
        path: "generated/deepest_lesson_card.md",
        about: "inline: the deepest networks (width 5000, batch 32) on the lesson's card, SGD and Adam",
        render: pages::cards::deepest_lesson_card,
    },
    Artifact {
        path: "generated/lesson_card_message.md",
        about: "the lesson's message above the engine's for Challenge 1 on the lesson's card",
        render: pages::cards::lesson_card_message,
    },
    Artifact {
        path: "generated/lesson_card_one_row_more.md",
        about: "the lesson's card one row past its largest batch: its peaks, and which tensors cut the block the failing request needed",
        render: pages::cards::lesson_card_one_row_more,
    },
    Artifact {
        path: "generated/lesson_card_one_row_more_commands.md",
        about: "the two commands that show the lesson's card's boundary",
        render: pages::cards::lesson_card_one_row_more_commands,
    },
    Artifact {
        path: "generated/lesson_card_parts.md",
        about: "inline: the largest batch with only the lesson's card's outside memory, and with only its PyTorch's defaults",
        render: pages::cards::lesson_card_parts,
    },
    Artifact {
        path: "generated/cublas_workspace_default.md",
        about: "inline: PyTorch's default cuBLAS workspace before Hopper, in bytes",
        render: pages::cards::cublas_workspace_default,
    },
    Artifact {
        path: "generated/cublas_workspace_hopper.md",
        about: "inline: PyTorch's cuBLAS workspace on Hopper",
        render: pages::cards::cublas_workspace_hopper,
    },
    Artifact {
        path: "generated/cublaslt_workspace.md",
        about: "inline: cuBLASLt's default workspace",
        render: pages::cards::cublaslt_workspace,
    },
    Artifact {
        path: "generated/lesson_outside.md",
        about: "inline: the lesson's card's memory outside the allocator, from its message",
        render: pages::cards::lesson_outside,
    },
    Artifact {
        path: "generated/largest_batch_on_card.md",
        about: "inline: the largest batch of the lesson's network that fits on the card (rows)",
        render: pages::challenge_1::largest_batch_on_card,
    },
    Artifact {
        path: "generated/equation_largest_batch.md",
        about: "inline: the largest batch of the lesson's network by the core's equation (rows)",
        render: pages::challenge_1::equation_largest_batch,
    },
    Artifact {
        path: "generated/deepest_sgd.md",
        about: "inline: the deepest network (width 5000, batch 32, SGD) that fits",
        render: pages::challenge_2::deepest_sgd,
    },
    Artifact {
        path: "generated/adam_by_version.md",
        about: "inline: challenge 2's deepest Adam network under --torch 2.0 and --torch 2.1 (foreach Adam's denominators)",
        render: pages::challenge_2::adam_by_version,
    },
    Artifact {
        path: "generated/deepest_adam.md",
        about: "inline: the deepest network (width 5000, batch 32, Adam) that fits",
        render: pages::challenge_2::deepest_adam,
    },
    Artifact {
        path: "generated/lesson_oom.md",
        about: "block: the lesson's out-of-memory message, verbatim (the figures the page derives from)",
        render: pages::oom_message::lesson_oom,
    },
    Artifact {
        path: "generated/oom_context_run.md",
        about: "blocks: challenge 1's full batch with --context-memory derived from the lesson's message, in both --oom-message forms",
        render: pages::oom_message::context_run_messages,
    },
    Artifact {
        path: "generated/oom_fields.md",
        about: "table: every field of both out-of-memory wordings, the lesson's figure, the engine's meaning and the run's figure",
        render: pages::oom_message::oom_fields,
    },
    Artifact {
        path: "generated/other_framework_message.md",
        about: "table: the field report's out-of-memory message from another framework, its bytes in PyTorch's units",
        render: pages::other_framework::other_framework_message,
    },
    Artifact {
        path: "generated/challenge4_time_advice.md",
        about: "paragraph: from the recorded times, the fastest strategy that fits at the deepest timed setup, per backing",
        render: pages::challenge_4::challenge4_time_advice,
    },
    Artifact {
        path: "generated/oom_outside.md",
        about: "paragraph: memory outside the allocator derived from the lesson's message, and what the run's figures match and cannot explain",
        render: pages::oom_message::outside_allocator,
    },
    Artifact {
        path: "generated/full_batch_rows.md",
        about: "inline: the rows of the lesson's training set",
        render: pages::challenge_1::full_batch_rows,
    },
    Artifact {
        path: "generated/full_batch_input.md",
        about: "inline: the full batch's input-batch bytes (features and labels of every row)",
        render: pages::challenge_1::full_batch_input,
    },
    Artifact {
        path: "generated/largest_batch_peak_allocated.md",
        about: "inline: peak allocated of the step at the largest batch that fits the card",
        render: pages::challenge_1::largest_batch_peak_allocated,
    },
    Artifact {
        path: "generated/largest_batch_peak_reserved.md",
        about: "inline: peak reserved of the step at the largest batch that fits the card",
        render: pages::challenge_1::largest_batch_peak_reserved,
    },
    Artifact {
        path: "generated/one_row_more_batch.md",
        about: "inline: one row more than the largest batch that fits the card (rows)",
        render: pages::monitoring::one_row_more_batch,
    },
    Artifact {
        path: "generated/one_row_more_oom.md",
        about: "block: the out-of-memory message one row past the largest batch that fits",
        render: pages::monitoring::one_row_more_oom,
    },
    Artifact {
        path: "generated/one_row_more_story.md",
        about: "paragraph: which pass and tensor ran out one row past the largest batch, and what cut the block it needed",
        render: pages::monitoring::one_row_more_story,
    },
    Artifact {
        path: "generated/one_row_more_commands.md",
        about: "block: the two challenge1 commands at the largest batch that fits and one row more",
        render: pages::monitoring::one_row_more_commands,
    },
    Artifact {
        path: "generated/challenge2_oom.md",
        about: "block: challenge 2's out-of-memory message at one layer too many (SGD)",
        render: pages::challenge_2::challenge2_oom,
    },
    Artifact {
        path: "generated/lesson_five_layers.md",
        about: "inline: what 5 hidden layers of 5000 need at batch 32 with SGD and Adam, and their share of the card",
        render: pages::challenge_2::lesson_five_layers,
    },
    Artifact {
        path: "generated/adam_slope_ratio.md",
        about: "inline: how many times as steeply Adam's peak climbs with depth as SGD's (width 5000, batch 32)",
        render: || Ok(format!("{:.1}", charts::depth::slope_ratio()?)),
    },
    Artifact {
        path: "generated/hidden_layer_in_numbers.md",
        about: "inline: a hidden-to-hidden layer of 5000, its parameters and their raw bytes with gradients",
        render: pages::networks::hidden_layer_in_numbers,
    },
    Artifact {
        path: "generated/per_layer_bytes.md",
        about: "inline: what each extra hidden layer of 5000 adds to the peak at batch 32 with SGD",
        render: pages::networks::per_layer_bytes,
    },
    Artifact {
        path: "generated/calculator_lesson.md",
        about: "the in-page calculator, starting from the lesson's network at 32 rows, where a step runs out folded (Challenge 1's guess)",
        render: pages::calculator::calculator_lesson,
    },
    Artifact {
        path: "generated/calculator_deep.md",
        about: "the in-page calculator, starting from Challenge 2's width and batch",
        render: pages::calculator::calculator_deep,
    },
    Artifact {
        path: "generated/calculator_strategies.md",
        about: "the in-page calculator, starting from Challenge 4's deeper full batch",
        render: pages::calculator::calculator_strategies,
    },
    Artifact {
        path: "generated/challenge3_leak.md",
        about: "challenge 3: the leaking vs the fixed loop on a 4 MiB card — epochs, outcome, peaks",
        render: pages::challenge_3::challenge3_leak,
    },
    Artifact {
        path: "generated/challenge3_fragmentation.md",
        about: "challenge 3: the fragmented cache's message and the remedies (outcome, segment allocations and frees)",
        render: pages::challenge_3::challenge3_fragmentation,
    },
    Artifact {
        path: "generated/challenge4_strategies.md",
        about: "challenge 4: each strategy's planned peak on challenge 1's full batch, and the cheapest that fits (no times)",
        render: pages::challenge_4::challenge4_strategies,
    },
    Artifact {
        path: "generated/challenge4_deep.md",
        about: "challenge 4: the same with 9 hidden layers, where checkpointing has layers to drop (no times)",
        render: pages::challenge_4::challenge4_deep,
    },
    Artifact {
        path: "generated/challenge4_parts.md",
        about: "challenge 4: the parts of peak_bytes, the core first, each with the rule it needs (the grader's hints)",
        render: pages::challenge_4_grader::challenge4_parts,
    },
    Artifact {
        path: "generated/challenge4_cases.md",
        about: "challenge 4: the choose_settings cases the grader asks by name, each with one choice that passes every rule",
        render: pages::challenge_4_grader::challenge4_cases,
    },
    Artifact {
        path: "generated/challenge4_needless.md",
        about: "inline: the full batch in float32 with one micro-batch fewer than the card needs: under 95 % of the card, yet out of memory",
        render: pages::challenge_4_grader::challenge4_needless,
    },
    Artifact {
        path: "generated/challenge4_deep_layers.md",
        about: "inline: the hidden layers of challenge 4's deeper setup (the pages' `-- --layers N`)",
        render: pages::challenge_4::challenge4_deep_layers,
    },
    Artifact {
        path: "generated/challenge5_demo.txt",
        about: "transcript: challenge 5's demo on the Adam network under the graded schemes",
        render: pages::challenge_5::challenge5_demo,
    },
    Artifact {
        path: "generated/challenge5_demo_command.md",
        about: "inline: the command whose output challenge5_demo.txt is",
        render: pages::challenge_5::challenge5_demo_command,
    },
    Artifact {
        path: "generated/challenge5_tolerances.md",
        about: "inline: how closely challenge 5's grader compares card_bytes, per scheme",
        render: pages::challenge_5::challenge5_tolerances,
    },
    Artifact {
        path: "generated/demo_challenge1.txt",
        about: "transcript: what `cargo run -p challenge1 -- --backend plan` prints",
        render: pages::instructors::demo_challenge1,
    },
    Artifact {
        path: "generated/grader_bits.txt",
        about: "transcript: challenge 1's grader on an answer that counts bits instead of bytes (the first miss)",
        render: pages::instructors::grader_bits,
    },
    Artifact {
        path: "generated/demo_challenge2.txt",
        about: "transcript: what `cargo run -p challenge2 -- --backend plan` prints",
        render: pages::instructors::demo_challenge2,
    },
    Artifact {
        path: "generated/quizzes/memory-equation.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for memory-equation.md, numbers from the engine",
        render: || crate::quizzes::render("memory-equation"),
    },
    Artifact {
        path: "generated/quizzes/mini-batching.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for mini-batching.md, numbers from the engine",
        render: || crate::quizzes::render("mini-batching"),
    },
    Artifact {
        path: "generated/quizzes/networks.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for networks.md, numbers from the engine",
        render: || crate::quizzes::render("networks"),
    },
    Artifact {
        path: "generated/quizzes/monitoring.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for monitoring.md, numbers from the engine",
        render: || crate::quizzes::render("monitoring"),
    },
    Artifact {
        path: "generated/quizzes/after-a-few-epochs.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for after-a-few-epochs.md, numbers from the engine",
        render: || crate::quizzes::render("after-a-few-epochs"),
    },
    Artifact {
        path: "generated/quizzes/challenge-3.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for challenge-3.md, numbers from the engine",
        render: || crate::quizzes::render("challenge-3"),
    },
    Artifact {
        path: "generated/quizzes/fitting-more.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for fitting-more.md, numbers from the engine",
        render: || crate::quizzes::render("fitting-more"),
    },
    Artifact {
        path: "generated/quizzes/challenge-4.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for challenge-4.md, numbers from the engine",
        render: || crate::quizzes::render("challenge-4"),
    },
    Artifact {
        path: "generated/quizzes/more-than-one-card.toml",
        about: "quiz: what DDP and ZeRO-3 keep on each card",
        render: || crate::quizzes::render("more-than-one-card"),
    },
    Artifact {
        path: "generated/quizzes/challenge-5.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for challenge-5.md, numbers from the engine",
        render: || crate::quizzes::render("challenge-5"),
    },
    Artifact {
        path: "generated/quizzes/allocator.toml",
        about: "quiz (mdbook-quiz): predict-then-check questions for allocator.md, numbers from the engine",
        render: || crate::quizzes::render("allocator"),
    },
    Artifact {
        path: "generated/reading_times.md",
        about: "each page's reading time from its rendered words (200 a minute), the table per page and part with quiz questions, the core's totals",
        render: crate::reading::reading_times,
    },
    Artifact {
        path: "generated/reading_words.json",
        about: "the lesson's pages with the words a reader sees on each, for the browser's count (bookcheck words)",
        render: crate::reading::reading_words,
    },
    Artifact {
        path: "generated/session_plans.md",
        about: "the instructors' plans: the core in one session, everything in a day (our chosen minutes), with the pages' reading times",
        render: crate::session::session_plans,
    },
];
