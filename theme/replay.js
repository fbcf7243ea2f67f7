// The replay in the page: a snapshot or a recording, dropped or chosen, replayed on the card
// and settings the learner picks by the book's replay module (crates/replay-page: the same
// library call as `memviz replay`, compiled to WebAssembly and committed as
// src/replay/gpumem_replay_page.wasm), in a worker (src/replay/replay-worker.js). The file
// never leaves the machine. This script builds the form, sends the fields as typed and shows
// the module's answer: the verdict, the command line that asks the same, memviz's text and
// its JSON. A page asks for one with <div class="gpumem-replay" data-sample=PATH
// data-sample-name=NAME data-sample-label=TEXT>.
(function () {
  "use strict";

  var w = window.gpumemWidgets;
  var el = w.el, field = w.field, select = w.select, text = w.text, refused = w.refused;
  var root = function () { return typeof path_to_root === "string" ? path_to_root : ""; };

  // One worker per page; requests are answered in order, each with its id.
  var worker = null, waiting = {}, nextId = 0;
  function start() {
    if (!worker) {
      worker = new Worker(root() + "replay/replay-worker.js");
      worker.onmessage = function (e) {
        var m = e.data, cb = waiting[m.id];
        if (!cb) return;
        if (m.type === "progress") { cb.progress(m); return; }
        delete waiting[m.id];
        if (m.type === "failed") cb.reject(new Error(m.message));
        else cb.resolve(m);
      };
      worker.onerror = function (e) {
        Object.keys(waiting).forEach(function (k) { waiting[k].reject(new Error(e.message || "the worker failed")); });
        waiting = {};
      };
    }
    return worker;
  }
  function ask(message, onProgress) {
    return new Promise(function (resolve, reject) {
      var id = ++nextId;
      waiting[id] = { resolve: resolve, reject: reject, progress: onProgress || function () {} };
      message.id = id;
      start().postMessage(message);
    });
  }
  var presetsAsked = null;
  function presets() {
    if (!presetsAsked) presetsAsked = ask({ type: "presets" }).then(function (m) { return JSON.parse(m.answer); });
    return presetsAsked;
  }
  // The module's answer, as its JSON text, to a request (JSON text) about a file's bytes.
  function answer(request, bytes, onProgress) {
    return ask({ type: "replay", request: request, bytes: bytes }, onProgress);
  }
  // For the browser check (bookcheck replay) and curious readers' consoles.
  window.gpumemReplay = { presets: presets, answer: answer };

  var serial = 0;
  var STAGES = ["Reading the file", "Replaying the trace", "Searching the largest batch"];

  function build(host, p) {
    var id = "replay" + (++serial) + "-";
    var d = host.dataset;
    var file = { name: "", bytes: null };
    var c = {
      file: el("input", { type: "file" }),
      sample: el("button", { type: "button", class: "replay-sample", text: "Use the shipped recording" }),
      card: select(p.cards.map(function (x) { return [x.value, x.label]; }).concat([["custom", "any size:"]]), p.default_card),
      customCard: text("80GiB"),
      context: text(""),
      torch: select([["", "the recording's"]].concat(p.torch.map(function (t) { return [t, "PyTorch " + t]; })), ""),
      capability: text("", "6"),
      expandable: el("input", { type: "checkbox" }),
      maxSplit: text(""),
      gc: text("", "6"),
      fraction: text("", "6"),
      noCaching: el("input", { type: "checkbox" }),
      allocConf: text("", "30"),
      batch: text(""),
      largest: el("input", { type: "checkbox" }),
      device: text("", "4"),
      frames: text("", "4")
    };
    c.largest.checked = true;
    var drop = el("div", { class: "replay-drop" }, [
      el("p", { class: "replay-drop-words", text: "Drop a snapshot (.pickle) here, choose one, or take the book's:" }),
      field(id + "file", "Snapshot or recording", c.file, "a pickle from PyTorch's _dump_snapshot or from pytorch/record.py"),
      el("p", {}, [c.sample, document.createTextNode(" " + (d.sampleLabel || ""))]),
      el("p", { class: "calc-hint", text: "Your file stays on this computer: this page reads it and replays it in WebAssembly; nothing is uploaded." })
    ]);
    var status = el("p", { class: "calc-status", role: "status" });
    var bar = el("progress", { class: "replay-progress", max: "1", value: "0", "aria-label": "Progress" });
    bar.hidden = true;
    var output = el("div", { class: "calc-output replay-output" });
    var form = el("form", { class: "calc-form", "aria-label": "Replay: the snapshot and the card" }, [
      drop,
      el("fieldset", {}, [el("legend", { text: "Card" }),
        field(id + "card", "Card (--card)", c.card, "a card sold as N GB is taken as N GiB (our choice): pick any size for what yours reports"),
        field(id + "custom", "Card size", c.customCard, "used with any size: what your card reports, e.g. 79.1GiB, 24GB"),
        field(id + "context", "Outside the allocator (--context-memory)", c.context, "the CUDA context and other processes; empty: the card's")]),
      el("details", { class: "calc-limits" }, [el("summary", { text: "Allocator settings (PYTORCH_CUDA_ALLOC_CONF)" }),
        el("fieldset", {}, [el("legend", { text: "Allocator" }),
          field(id + "exp", "expandable_segments (--expandable-segments)", c.expandable),
          field(id + "split", "max_split_size (--max-split-size)", c.maxSplit, "a size, at least 20MiB"),
          field(id + "gc", "garbage_collection_threshold (--gc-threshold)", c.gc, "between 0 and 1; acts with a memory fraction"),
          field(id + "frac", "memory fraction (--memory-fraction)", c.fraction, "0 to 1"),
          field(id + "nocache", "no caching (--no-caching)", c.noCaching),
          field(id + "conf", "As PYTORCH_CUDA_ALLOC_CONF (--alloc-conf)", c.allocConf, "replaces the snapshot's own settings")])]),
      el("fieldset", {}, [el("legend", { text: "Batch" }),
        field(id + "batch", "Batch (--batch)", c.batch, "a recording only; empty: as recorded"),
        field(id + "largest", "Also find the largest batch (--largest-batch)", c.largest, "a recording only: skipped, with the reason, for a GPU snapshot")]),
      el("details", { class: "calc-limits" }, [el("summary", { text: "More: PyTorch version, compute capability, device, frames shown" }),
        el("fieldset", {}, [el("legend", { text: "More" }),
          field(id + "torch", "PyTorch (--torch)", c.torch, "the recording's unless you pick one; a GPU snapshot has none"),
          field(id + "cap", "Compute capability (--compute-capability)", c.capability, "X.Y, e.g. 8.0; empty: the recording's card"),
          field(id + "device", "Device (--device)", c.device, "the card whose trace to replay, when the snapshot has several"),
          field(id + "frames", "Stack frames shown (--frames)", c.frames, "for the tensor that did not fit; empty: " + p.frames + " (the JSON has them all)")])]),
      el("p", {}, [el("button", { type: "submit", class: "replay-run", text: "Replay" })])
    ]);
    host.replaceChildren(form, bar, status, output);
    host.classList.add("replay-ready");

    function request() {
      var card = c.card.value === "custom" ? c.customCard.value : c.card.value;
      var r = {
        name: file.name, card: card, context_memory: c.context.value, torch: c.torch.value,
        compute_capability: c.capability.value, alloc_conf: c.allocConf.value,
        max_split_size: c.maxSplit.value, gc_threshold: c.gc.value, memory_fraction: c.fraction.value,
        expandable_segments: c.expandable.checked, no_caching: c.noCaching.checked,
        batch: c.batch.value, largest_batch_when_possible: c.largest.checked,
        device: c.device.value, frames: c.frames.value
      };
      return JSON.stringify(r);
    }

    var busy = false, again = false;
    function run() {
      c.customCard.disabled = c.card.value !== "custom";
      if (!file.bytes) { status.textContent = "Choose a snapshot first."; return; }
      if (busy) { again = true; return; }
      busy = true;
      var asked = request(), stage = -1;
      host.dataset.request = asked;
      bar.hidden = false; bar.removeAttribute("value");
      status.textContent = "Replaying " + file.name + "…";
      host.setAttribute("aria-busy", "true");
      answer(asked, file.bytes.slice(0), function (m) {
        if (m.stage !== stage) { stage = m.stage; status.textContent = STAGES[m.stage] + "…"; }
        if (m.stage === 2) { bar.removeAttribute("value"); status.textContent = STAGES[2] + ": " + m.done + " replays, trying " + m.of.toLocaleString("en"); }
        else if (m.of > 0) { bar.value = m.done / m.of; }
      }).then(function (m) {
        host.dataset.answer = m.answer;
        host.dataset.ms = String(Math.round(m.ms));
        show(JSON.parse(m.answer), m.ms);
      }).catch(function (e) {
        output.replaceChildren(refused(w.loadFailure("the replay", e)));
        status.textContent = "";
      }).then(function () {
        busy = false; bar.hidden = true; host.removeAttribute("aria-busy");
        if (again) { again = false; run(); }
      });
    }

    function show(a, ms) {
      status.textContent = "";
      if (a.error) {
        host.dataset.exit = String(a.exit);
        output.replaceChildren(refused(a.error));
        return;
      }
      host.dataset.exit = String(a.exit);
      var verdict = a.fits ? "Fits (memviz replay's exit status 0)." : "Does not fit: out of memory (exit status 3). The report says where.";
      output.replaceChildren.apply(output, [
        el("p", { class: a.fits ? "calc-verdict calc-fits" : "calc-verdict calc-oom" }, [el("strong", { text: verdict })]),
        el("pre", { class: "replay-text", tabindex: "0", "aria-label": "memviz replay's report" }, [el("code", { text: a.text })]),
        a.largest_batch_skipped ? el("p", { class: "calc-hint", text: "The largest batch was not searched: " + a.largest_batch_skipped + "." }) : null,
        commandOf(a.command),
        el("details", { class: "calc-limits" }, [
          el("summary", { text: "The report as JSON (what memviz replay --json prints)" }),
          el("pre", { class: "replay-json", tabindex: "0" }, [el("code", { text: JSON.stringify(a.report, null, 2) })])
        ]),
        el("p", { class: "calc-hint", text: "Replayed in " + Math.round(ms) + " ms in this page." })
      ].filter(Boolean));
    }

    function commandOf(command) {
      return command ? el("div", {}, [
        el("p", { text: "The same question on the command line:" }),
        el("pre", { class: "replay-command", tabindex: "0" }, [el("code", { text: command })])
      ]) : null;
    }

    function take(name, bytes) {
      file = { name: name, bytes: bytes };
      run();
    }
    function readFile(f) {
      status.textContent = "Reading " + f.name + "…";
      f.arrayBuffer().then(function (b) { take(f.name, b); }).catch(function (e) {
        output.replaceChildren(refused("cannot read " + f.name + ": " + e.message));
      });
    }
    c.file.addEventListener("change", function () { if (c.file.files.length) readFile(c.file.files[0]); });
    c.sample.addEventListener("click", function () {
      status.textContent = "Fetching the shipped recording…";
      fetch(root() + d.sample).then(function (r) {
        if (!r.ok) throw new Error("the book answered HTTP " + r.status);
        return r.arrayBuffer();
      }).then(function (b) { take(d.sampleName || d.sample, b); }).catch(function (e) {
        output.replaceChildren(refused(w.loadFailure("the shipped recording", e)));
      });
    });
    ["dragenter", "dragover"].forEach(function (t) {
      host.addEventListener(t, function (e) { e.preventDefault(); drop.classList.add("replay-over"); });
    });
    ["dragleave", "drop"].forEach(function (t) {
      host.addEventListener(t, function () { drop.classList.remove("replay-over"); });
    });
    host.addEventListener("drop", function (e) {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) readFile(e.dataTransfer.files[0]);
    });
    form.addEventListener("submit", function (e) { e.preventDefault(); run(); });
    form.addEventListener("change", function (e) { if (e.target !== c.file) run(); });
    c.customCard.disabled = true;
  }

  function begin() {
    var hosts = document.querySelectorAll(".gpumem-replay");
    if (!hosts.length) return;
    presets().then(function (p) {
      hosts.forEach(function (host) { build(host, p); });
    }).catch(function (e) {
      // The fallback (the shipped recording's answer, as the page would show it) stays.
      hosts.forEach(function (host) { host.insertBefore(refused(w.loadFailure("the replay", e)), host.firstChild); });
    });
  }
  document.addEventListener("DOMContentLoaded", begin);
})();
