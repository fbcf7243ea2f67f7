// The replay's worker: runs the book's replay module (crates/replay-page, compiled to
// WebAssembly and committed beside this file) off the page's main thread, so the page stays
// responsive and can draw progress while a large snapshot replays. It answers three
// messages: {type: "presets"}, {type: "replay", id, request, bytes} and nothing else; every
// answer is the module's own JSON text, passed on untouched.
"use strict";

var MODULE = "gpumem_replay_page.wasm";
var exportsReady = null;
var current = 0;
var lastPost = 0;

// The module calls this now and then: stage 0 reading bytes, 1 replaying operations, 2 the
// largest batch's search (done: replays so far, of: the batch tried). At most every 50 ms.
function progress(stage, done, of) {
  var now = performance.now();
  if (now - lastPost < 50 && !(stage !== 2 && done >= of)) return;
  lastPost = now;
  postMessage({ type: "progress", id: current, stage: stage, done: done, of: of });
}

function load() {
  if (!exportsReady) {
    exportsReady = fetch(MODULE)
      .then(function (r) {
        if (!r.ok) throw new Error("the module answered HTTP " + r.status);
        return r.arrayBuffer();
      })
      .then(function (bytes) {
        return WebAssembly.instantiate(bytes, { env: { replay_progress: progress } });
      })
      .then(function (m) { return m.instance.exports; });
  }
  return exportsReady;
}

function result(x, len) {
  return new TextDecoder().decode(new Uint8Array(x.memory.buffer, x.replay_result_ptr(), len));
}

function put(x, bytes) {
  var ptr = x.replay_alloc(bytes.length);
  new Uint8Array(x.memory.buffer, ptr, bytes.length).set(bytes);
  return ptr;
}

function replay(x, request, bytes) {
  var req = new TextEncoder().encode(request);
  var file = new Uint8Array(bytes);
  var rp = put(x, req);
  var fp = put(x, file);
  try {
    return result(x, x.replay_answer(rp, req.length, fp, file.length));
  } finally {
    x.replay_free(rp, req.length);
    x.replay_free(fp, file.length);
  }
}

onmessage = function (e) {
  var msg = e.data;
  load().then(function (x) {
    if (msg.type === "presets") {
      postMessage({ type: "presets", id: msg.id, answer: result(x, x.replay_presets()) });
    } else if (msg.type === "replay") {
      current = msg.id;
      lastPost = 0;
      var start = performance.now();
      var answer = replay(x, msg.request, msg.bytes);
      postMessage({ type: "answer", id: msg.id, answer: answer, ms: performance.now() - start });
    }
  }).catch(function (err) {
    postMessage({ type: "failed", id: msg.id, message: String(err && err.message || err) });
  });
};
