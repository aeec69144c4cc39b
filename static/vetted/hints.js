// A card's hints (similar records, possible contradictions, other proposals
// about the same record) are fetched as soon as the card is on the page. A
// decision key pressed on a card whose hints have not come yet is held, and
// the card says so: the reviewer decides with the hints in view, never
// before them. If the hints fail to load, the key works again (the card says
// they are unavailable). External file, no inline script: it runs under the
// site's Content-Security-Policy.
(function () {
  "use strict";
  var DECISION_KEYS = { a: true, r: true, s: true, t: true };

  function typing(event) {
    var tag = (event.target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable;
  }

  function currentCard() {
    return document.querySelector("[data-card].current") || document.querySelector("[data-card]:not(.decided)");
  }

  function say(slot, text) {
    var note = slot.querySelector("[data-hints-note]");
    if (!note) {
      note = document.createElement("p");
      note.className = "notice small";
      note.setAttribute("role", "status");
      note.setAttribute("data-hints-note", "");
      slot.appendChild(note);
    }
    note.textContent = text;
  }

  // Capture phase: before the decision keys' own handler.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event) || !DECISION_KEYS[event.key]) return;
    var card = currentCard();
    var slot = card && card.querySelector('[data-hints="loading"]');
    if (!slot) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    say(slot, "The hints for this proposal are still loading; press " + event.key + " again once they show.");
  }, true);

  function failed(event) {
    var slot = event.detail && event.detail.elt;
    if (!slot || slot.getAttribute("data-hints") !== "loading") return;
    slot.setAttribute("data-hints", "failed");
    say(slot, "The hints could not be loaded; open the link above to see them.");
  }
  document.addEventListener("htmx:responseError", failed);
  document.addEventListener("htmx:sendError", failed);
})();
