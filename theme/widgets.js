// What the book's widgets (theme/calculator.js, theme/replay.js) build their forms with:
// elements, labelled fields, selects, a refusal. Loaded before them (book.toml).
(function () {
  "use strict";

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(c); });
    return node;
  }

  // A control with its label and an optional hint, the hint tied to it for screen readers.
  function field(id, label, control, hint) {
    control.id = id;
    if (hint) control.setAttribute("aria-describedby", id + "-hint");
    return el("div", { class: "calc-field" }, [
      el("label", { for: id, text: label }),
      control,
      hint ? el("span", { class: "calc-hint", id: id + "-hint", text: hint }) : null
    ]);
  }

  function select(options, chosen) {
    var s = el("select");
    options.forEach(function (o) {
      var opt = el("option", { value: o[0], text: o[1] });
      if (o[0] === chosen) opt.selected = true;
      s.appendChild(opt);
    });
    return s;
  }

  function text(value, size) {
    return el("input", { type: "text", value: value, size: size || "10", spellcheck: "false" });
  }

  function refused(message) {
    return el("div", { class: "calc-refused", role: "alert" }, [
      el("p", {}, [el("strong", { text: "Refused: " }), document.createTextNode(message)])
    ]);
  }

  // Why a module could not load, with the fix where the page was opened as a file.
  function loadFailure(what, e) {
    return what + " could not load: " + e.message +
      (location.protocol === "file:" ? " (pages opened as files cannot load it: run `mdbook serve`)" : "");
  }

  window.gpumemWidgets = { el: el, field: field, select: select, text: text, refused: refused, loadFailure: loadFailure };
})();
