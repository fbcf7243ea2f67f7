// The memory calculator: the engine's own planner (crates/calculator, compiled to
// WebAssembly and committed as src/calculator/gpumem_calculator.wasm) behind a small form.
// Every number it shows comes from the module; this script only builds the form, sends the
// learner's choices as JSON and draws the answer. A page asks for one with
// <div class="gpumem-calculator" data-width=… data-layers=… data-batch=… data-optimizer=…>.
(function () {
  "use strict";

  var MODULE = "calculator/gpumem_calculator.wasm";
  var engine = null;

  // Loads the module once per page; resolves to { presets(), calculateText(json) }.
  function load() {
    if (!engine) {
      var root = typeof path_to_root === "string" ? path_to_root : "";
      engine = fetch(root + MODULE)
        .then(function (r) {
          if (!r.ok) throw new Error("the module answered HTTP " + r.status);
          return r.arrayBuffer();
        })
        .then(function (bytes) { return WebAssembly.instantiate(bytes, {}); })
        .then(function (m) { return api(m.instance.exports); });
    }
    return engine;
  }

  function api(x) {
    var encoder = new TextEncoder();
    var decoder = new TextDecoder();
    function result(len) {
      return decoder.decode(new Uint8Array(x.memory.buffer, x.calculator_result_ptr(), len));
    }
    return {
      presets: function () { return JSON.parse(result(x.calculator_presets())); },
      calculateText: function (json) {
        var bytes = encoder.encode(json);
        var ptr = x.calculator_alloc(bytes.length);
        new Uint8Array(x.memory.buffer, ptr, bytes.length).set(bytes);
        try {
          return result(x.calculator_calculate(ptr, bytes.length));
        } finally {
          x.calculator_free(ptr, bytes.length);
        }
      }
    };
  }

  // The same module, for the browser check (bookcheck) and for curious readers' consoles.
  window.gpumemCalculator = { load: load };

  var serial = 0;

  var w = window.gpumemWidgets;
  var el = w.el, field = w.field, select = w.select, refused = w.refused;

  function number(value) {
    return el("input", { type: "text", inputmode: "numeric", value: value, size: "10", spellcheck: "false" });
  }

  // A field's text as a JSON value: a number literal as typed (so the engine, not
  // JavaScript's doubles, judges it), or a string the engine refuses with a reason.
  function literal(text) {
    var t = text.trim();
    return /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t) ? t : JSON.stringify(t);
  }

  function build(host, presets) {
    var id = "calc" + (++serial) + "-";
    var d = host.dataset;
    var controls = {
      width: number(d.width || ""),
      layers: number(d.layers || ""),
      inputs: number(String(presets.inputs)),
      batchKind: select([["all", "the whole training set (" + presets.training_rows.toLocaleString("en") + " rows)"], ["rows", "rows per step:"]], d.batch === "all" ? "all" : "rows"),
      rows: number(d.rows || ""),
      optimizer: select([["sgd", "SGD"], ["sgd_momentum", "SGD with momentum"], ["adam", "Adam"]], d.optimizer || "sgd"),
      precision: select([["float32", "float32"], ["mixed", "mixed (autocast float16)"], ["float64", "float64"]], d.precision || "float32"),
      accumulation: number(d.accumulation || ""),
      checkpointing: select([["off", "off"], ["every", "every k layers"], ["sqrt", "segments of √L layers"]], d.checkpointing || "off"),
      segment: number(d.segment || ""),
      relu: el("input", { type: "checkbox" }),
      card: select(presets.cards.map(function (c) { return [c.card, c.label]; }).concat([["custom", "any size:"]]), presets.cards[0].card),
      holds: select(presets.holds.map(function (h) { return [h.preset, h.label]; }), presets.holds[0].preset),
      customCard: el("input", { type: "text", value: presets.cards[presets.cards.length - 1].card, size: "10", spellcheck: "false" }),
      message: select([["lesson", "the lesson's (PyTorch up to 2.0)"], ["current", "today's PyTorch"]], "lesson")
    };
    var status = el("p", { class: "calc-status", role: "status" });
    var output = el("div", { class: "calc-output", "aria-live": "polite" });
    var form = el("form", { class: "calc-form", "aria-label": "Memory calculator inputs" }, [
      el("fieldset", {}, [el("legend", { text: "Network and batch" }),
        field(id + "inputs", "Inputs per row", controls.inputs),
        field(id + "width", "Width (neurons per hidden layer)", controls.width),
        field(id + "layers", "Hidden layers", controls.layers),
        field(id + "batch", "Batch", controls.batchKind),
        field(id + "rows", "Rows per step", controls.rows, "used when the batch is rows per step")]),
      el("fieldset", {}, [el("legend", { text: "Training" }),
        field(id + "optimizer", "Optimizer", controls.optimizer),
        field(id + "precision", "Precision", controls.precision),
        field(id + "accumulation", "Micro-batches per step (accumulation)", controls.accumulation),
        field(id + "checkpointing", "Activation checkpointing", controls.checkpointing),
        field(id + "segment", "k (layers per segment)", controls.segment, "used with every k layers"),
        field(id + "relu", "In-place ReLU", controls.relu)]),
      el("fieldset", {}, [el("legend", { text: "Card" }),
        field(id + "card", "Card", controls.card),
        field(id + "custom", "Card size", controls.customCard, "used with any size: e.g. 24GiB, 40000MiB, 12GB"),
        field(id + "holds", "It also holds", controls.holds),
        field(id + "message", "Out-of-memory message", controls.message),
        el("p", { class: "calc-hint", text: presets.nominal_note })])
    ]);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    host.replaceChildren(form, status, output);
    host.classList.add("calc-ready");

    function request() {
      var checkpointing = controls.checkpointing.value === "off" ? '{"kind":"off"}'
        : controls.checkpointing.value === "sqrt" ? '{"kind":"sqrt"}'
        : '{"kind":"every","layers":' + literal(controls.segment.value) + "}";
      var card = controls.card.value === "custom" ? controls.customCard.value : controls.card.value;
      return "{" + [
        '"inputs":' + literal(controls.inputs.value),
        '"width":' + literal(controls.width.value),
        '"layers":' + literal(controls.layers.value),
        '"batch":' + (controls.batchKind.value === "all" ? '"all"' : literal(controls.rows.value)),
        '"optimizer":' + JSON.stringify(controls.optimizer.value),
        '"precision":' + JSON.stringify(controls.precision.value),
        '"accumulation":' + literal(controls.accumulation.value),
        '"checkpointing":' + checkpointing,
        '"relu_inplace":' + (controls.relu.checked ? "true" : "false"),
        '"card":' + JSON.stringify(card),
        '"preset":' + JSON.stringify(controls.holds.value),
        '"oom_message":' + JSON.stringify(controls.message.value)
      ].join(",") + "}";
    }

    var timer = null;
    function update() {
      controls.rows.disabled = controls.batchKind.value === "all";
      controls.segment.disabled = controls.checkpointing.value !== "every";
      controls.customCard.disabled = controls.card.value !== "custom";
      status.textContent = "Calculating…";
      clearTimeout(timer);
      timer = setTimeout(function () {
        load().then(function (calc) {
          // Kept on the element so the browser check can ask the native engine the same.
          host.dataset.request = request();
          var answer = JSON.parse(calc.calculateText(host.dataset.request));
          status.textContent = "";
          output.replaceChildren(answer.error ? refused(answer.error) : render(answer, d.guessFirst === "true"));
        }).catch(failed);
      }, 150);
    }
    function failed(e) {
      status.textContent = "";
      output.replaceChildren(refused(w.loadFailure("the calculator", e)));
    }
    form.addEventListener("input", update);
    form.addEventListener("change", update);
    update();
  }

  function count(n) { return n.toLocaleString("en"); }

  function message(a) {
    return a.oom_message ? el("pre", { class: "calc-message", tabindex: "0" }, [el("code", { text: a.oom_message })]) : null;
  }

  // Where the step ran out, its tensor and PyTorch's message, behind a disclosure (kept open
  // across answers once opened), for a calculator on a page before Challenge 1.
  var failureOpen = false;
  function failure(a) {
    if (a.fits) return null;
    var d = el("details", { class: "calc-limits calc-failure" }, [
      el("summary", { text: "Where it ran out, and the message (Challenge 1 asks this: guess first)" }),
      el("p", { text: "Out of memory in the " + a.failed_in +
        (a.timeline.failed_label ? ", allocating " + a.timeline.failed_label : "") + "." }),
      message(a)
    ]);
    d.open = failureOpen;
    d.addEventListener("toggle", function () { failureOpen = d.open; });
    return d;
  }

  function render(a, guessFirst) {
    // Where a step runs out is Challenge 1's guess: a calculator before it folds that part.
    var where = guessFirst ? "" : " in the " + a.failed_in;
    var verdict = a.fits
      ? "Fits: the step peaks at " + a.peak_reserved.text + " reserved (" + a.peak_allocated.text + " allocated) of a " + a.card.text + " card."
      : "Does not fit: out of memory" + where + " (" + a.peak_allocated.text + " allocated when it failed, card " + a.card.text + ").";
    var rows = a.categories.map(function (c) {
      var share = a.equation_peak.bytes > 0 ? c.bytes / a.equation_peak.bytes : 0;
      return el("tr", {}, [
        el("th", { scope: "row", text: c.name }),
        el("td", { class: "calc-num", text: c.text }),
        el("td", {}, [el("span", { class: "calc-bar", style: "width:" + (share * 100).toFixed(1) + "%" })])
      ]);
    });
    rows.push(el("tr", { class: "calc-total" }, [
      el("th", { scope: "row", text: "peak allocated, by the equation" }),
      el("td", { class: "calc-num", text: a.equation_peak.text }),
      el("td", { text: a.equation_exact ? "exact for this setup" : "may be off by up to " + a.equation_margin.text })
    ]));
    var depth = a.deepest_network === null ? "none" : count(a.deepest_network) + (a.deepest_network === a.depth_search_limit ? " or more" : "");
    return el("div", {}, [
      el("p", { class: a.fits ? "calc-verdict calc-fits" : "calc-verdict calc-oom" }, [el("strong", { text: verdict })]),
      el("table", { class: "calc-table" }, [
        el("caption", { text: "Memory at the step's busiest moment (" + count(a.rows) + " rows, " + count(a.parameters) + " parameters)" }),
        el("tbody", {}, rows)
      ]),
      el("dl", { class: "calc-facts" }, [
        el("dt", { text: "Measured on the plan backing (two steps)" }),
        el("dd", { text: "model " + a.model_allocated.text + " · peak allocated " + a.peak_allocated.text + " · peak reserved " + a.peak_reserved.text })
      ]),
      // Folded until asked: they are Challenges 1 and 2's answers, which a learner guesses first.
      limits(a, depth),
      guessFirst ? failure(a) : message(a),
      timeline(a, guessFirst),
      el("ul", { class: "calc-notes" }, a.notes.map(function (n) { return el("li", { text: n }); }))
    ]);
  }

  // The largest batch and the deepest network that fit, behind a disclosure kept open
  // across answers once the reader opens it.
  var limitsOpen = false;
  function limits(a, depth) {
    var d = el("details", { class: "calc-limits" }, [
      el("summary", { text: "Largest batch and deepest network that fit (the answers of Challenges 1 and 2: guess first)" }),
      el("dl", { class: "calc-facts" }, [
        el("dt", { text: "Largest batch that fits this card" }),
        el("dd", { text: a.largest_batch === null ? "none" : count(a.largest_batch) + " rows" }),
        el("dt", { text: "Deepest network that fits at this batch" }),
        el("dd", { text: depth === "none" ? "none" : depth + " hidden layers" })
      ])
    ]);
    d.open = limitsOpen;
    d.addEventListener("toggle", function () { limitsOpen = d.open; });
    return d;
  }

  // allocated (solid) and reserved (dashed) through the measured steps.
  function timeline(a, guessFirst) {
    var t = a.timeline, w = 600, h = 120;
    var top = Math.max.apply(null, t.points.map(function (p) { return p.reserved; }).concat([1]));
    var last = Math.max(1, t.points.length - 1);
    function line(key) {
      return t.points.map(function (p, i) {
        return (i / last * w).toFixed(1) + "," + (h - p[key] / top * (h - 4)).toFixed(1);
      }).join(" ");
    }
    var ns = "http://www.w3.org/2000/svg";
    var svg = document.createElementNS(ns, "svg");
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("class", "calc-timeline");
    svg.setAttribute("role", "img");
    var title = "Allocated (solid) and reserved (dashed) memory over " + count(t.events) +
      " allocator events of the measured steps, up to " + a.peak_reserved.text + " reserved" +
      (t.peak_label && (a.fits || !guessFirst) ? "; the highest allocation is " + t.peak_label : "") +
      (t.failed_label && !guessFirst ? "; it failed allocating " + t.failed_label : "") + ".";
    svg.setAttribute("aria-label", title);
    [["allocated", ""], ["reserved", "6 4"]].forEach(function (s) {
      var p = document.createElementNS(ns, "polyline");
      p.setAttribute("points", line(s[0]));
      p.setAttribute("class", "calc-line-" + s[0]);
      if (s[1]) p.setAttribute("stroke-dasharray", s[1]);
      svg.appendChild(p);
    });
    return el("figure", { class: "calc-figure" }, [svg, el("figcaption", { text: title })]);
  }

  function start() {
    var hosts = document.querySelectorAll(".gpumem-calculator");
    if (!hosts.length) return;
    load().then(function (calc) {
      var presets = calc.presets();
      hosts.forEach(function (host) { build(host, presets); });
    }).catch(function (e) {
      hosts.forEach(function (host) {
        host.replaceChildren(refused(w.loadFailure("the calculator", e)));
      });
    });
  }
  document.addEventListener("DOMContentLoaded", start);
})();
