// Opens a collapsed solution when the page is reached through a link to it.
(function () {
  function openTarget() {
    if (!location.hash) return;
    var el = document.getElementById(decodeURIComponent(location.hash.slice(1)));
    if (el && el.tagName === "DETAILS") el.open = true;
  }
  window.addEventListener("hashchange", openTarget);
  document.addEventListener("DOMContentLoaded", openTarget);
})();

// Code blocks and wide tables scroll sideways; make each one focusable so that a keyboard
// reader can scroll it too (WCAG 2.1.1).
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("pre > code, .table-wrapper").forEach(function (el) {
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "0");
  });
});
