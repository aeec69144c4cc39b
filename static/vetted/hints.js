// A card's hints (similar records, possible contradictions, other proposals
// about the same record) are fetched as soon as the card is on the page. A
// decision key pressed on a card whose hints have not come yet is held, and
// the card says so: the reviewer decides with the hints in view, never
// before them. If the hints fail to load, the key works again (the card says
// they are unavailable). External file, no inline script: it runs under the
// site's Content-Security-Policy.
(function () {
  "use strict";
  var DECISION_KEYS = { a: true, r: true, s: true, t: true, m: true, d: true };

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
      note = document.createElement(slot.tagName === "SPAN" || slot.tagName === "FORM" ? "span" : "p");
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

  function loadingIn(card) {
    return card && card.querySelector('[data-hints="loading"]');
  }

  // A compact line's one-tap Accept (a form inside the line) waits for the
  // line's flags as its key does: the submit is stopped before htmx or the
  // browser sends it, and the line says why.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (!form || form.id === "bulk") return;
    var card = form.closest && form.closest("[data-card].line");
    var slot = loadingIn(card);
    var accept = event.submitter ? event.submitter.getAttribute("data-key") === "a" : !!form.querySelector('[data-key="a"]');
    if (!slot || !accept) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    say(slot, "Hints still loading; tap Accept again once they show.");
  }, true);

  // The checkbox bar waits while any selected proposal's hints load (the
  // server still computes every flag of a bulk accept and asks again).
  document.addEventListener("submit", function (event) {
    var bar = event.target;
    if (!bar || bar.id !== "bulk") return;
    var boxes = document.querySelectorAll('input[name="ids"][form="bulk"]:checked');
    for (var i = 0; i < boxes.length; i++) {
      if (loadingIn(boxes[i].closest("[data-card]"))) {
        event.preventDefault();
        event.stopImmediatePropagation();
        say(bar, "The hints of a selected proposal are still loading; try again once they show.");
        return;
      }
    }
  }, true);

  // ---- A card's hints folded after their first lines (the possible
  // contradiction alert comes first, so it always shows), with "All hints";
  // a card stays short enough that its top and its decision buttons fit one
  // phone screen. The merge and duplicate keys (m, d) press their buttons
  // folded or not. Without JavaScript every hint shows.
  var HINTS_FOLD_PX = 120;
  function foldHints(root) {
    if (!root || !root.querySelectorAll) return;
    var found = root.matches && root.matches(".hints[data-hints=ready]") ? [root] : root.querySelectorAll(".hints[data-hints=ready]");
    Array.prototype.forEach.call(found, function (hints) {
      if (hints.dataset.folding) return;
      // Keep the first match whole (with its Merge / Reject-as-duplicate
      // buttons, which a tap must reach): fold below it, or below the first lines.
      var first = hints.querySelector("li.hint");
      var top = hints.getBoundingClientRect().top;
      var keep = Math.max(HINTS_FOLD_PX, first ? Math.ceil(first.getBoundingClientRect().bottom - top) + 24 : 0);
      if (hints.scrollHeight <= keep + 40) return;
      hints.dataset.folding = "1";
      hints.style.setProperty("--hints-keep", keep + "px");
      hints.classList.add("hints-folded");
      var button = document.createElement("button");
      button.type = "button";
      button.className = "link all-hints";
      button.setAttribute("aria-expanded", "false");
      button.setAttribute("aria-controls", hints.id);
      button.textContent = "All hints";
      hints.insertAdjacentElement("afterend", button);
    });
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.all-hints");
    if (!button) return;
    var hints = document.getElementById(button.getAttribute("aria-controls"));
    if (!hints) return;
    var folded = hints.classList.toggle("hints-folded");
    button.setAttribute("aria-expanded", folded ? "false" : "true");
    button.textContent = folded ? "All hints" : "Fewer hints";
  });
  // A control inside folded hints that takes the focus (Tab) opens them.
  document.addEventListener("focusin", function (event) {
    var hints = event.target.closest && event.target.closest(".hints.hints-folded");
    // Keyboard focus only: a tap focuses too, and opening the hints under the
    // finger moved the page between the press and the click (the merge was lost).
    if (!hints || !event.target.matches(":focus-visible")) return;
    hints.classList.remove("hints-folded");
    var button = document.querySelector('button.all-hints[aria-controls="' + hints.id + '"]');
    if (button) { button.setAttribute("aria-expanded", "true"); button.textContent = "Fewer hints"; }
  });
  document.addEventListener("htmx:load", function (event) { foldHints(event.target); });

  function failed(event) {
    var slot = event.detail && event.detail.elt;
    if (!slot || slot.getAttribute("data-hints") !== "loading") return;
    slot.setAttribute("data-hints", "failed");
    say(slot, "The hints could not be loaded; open the link above to see them.");
  }
  document.addEventListener("htmx:responseError", failed);
  document.addEventListener("htmx:sendError", failed);
})();
