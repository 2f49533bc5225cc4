// sgam ui: the one script. Pages work without it; it links a version's bar in the
// picture with its row in the table, so pointing at one highlights the other.
(function () {
  "use strict";
  function mark(id, on) {
    document.querySelectorAll('[data-fact-id="' + CSS.escape(id) + '"]').forEach(function (el) {
      el.classList.toggle("hover", on);
    });
  }
  document.querySelectorAll("[data-fact-id]").forEach(function (el) {
    var id = el.getAttribute("data-fact-id");
    el.addEventListener("mouseenter", function () { mark(id, true); });
    el.addEventListener("mouseleave", function () { mark(id, false); });
  });
})();
