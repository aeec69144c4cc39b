// Keyboard for the review pages: j/k move between cards, a accept (or verify),
// e revise, r reject (opens the note; Enter sends), x select, ? help.
// On a dispute or retirement card (inbox and /disputed/ alike): s keep record,
// e correct record, t retire record; s and t only open a confirm step, so no
// single key retires or replaces a record. u presses the Undo toast's button.
// Plain script, no build step; everything it clicks also works without it.
(function () {
  "use strict";
  var current = null;

  function cards() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-card]:not(.decided)"));
  }

  function focusCard(card, block) {
    if (current) current.classList.remove("current");
    current = card || null;
    if (!current) return;
    current.classList.add("current");
    current.focus({ preventScroll: true });
    var calm = block || window.matchMedia("(prefers-reduced-motion: reduce)").matches;
    current.scrollIntoView({ block: block || "nearest", behavior: calm ? "auto" : "smooth" });
  }

  function move(step) {
    var list = cards();
    if (!list.length) return;
    var i = list.indexOf(current);
    focusCard(list[i < 0 ? 0 : Math.min(Math.max(i + step, 0), list.length - 1)]);
  }

  function press(key) {
    if (!current || !document.body.contains(current)) move(0);
    if (!current) return;
    var target = current.querySelector('[data-key="' + key + '"]');
    if (!target) {
      // A or r by habit on a dispute or retirement card does nothing; say which keys decide it.
      if ((key === "a" || key === "r") && current.querySelector("[data-decision]")) {
        var here = Array.prototype.map.call(current.querySelectorAll("[data-key]"), function (el) {
          return el.getAttribute("data-key") + " " + el.textContent.trim();
        });
        showHint("Keys on this card: " + here.join(", ") + " (retiring asks you to confirm).");
      }
      return;
    }
    if (target.tagName === "SUMMARY") {
      var details = target.parentElement;
      details.open = true;
      var input = details.querySelector("input[name=note]") || details.querySelector("button[type=submit]");
      if (input) input.focus();
    } else {
      target.click();
    }
  }

  // ---- Undo toast ----
  function undo() {
    var button = document.querySelector("#undo-toast:not(.expired) button[data-undo]");
    if (button) button.click();
  }

  // data-expires (epoch ms): when the server would refuse the toast's Undo.
  function watchToast() {
    var toast = document.getElementById("undo-toast");
    if (!toast || toast.dataset.watched) return;
    toast.dataset.watched = "1";
    var left = parseInt(toast.dataset.expires, 10) - Date.now();
    if (isNaN(left)) return;
    // Gone once Undo would be refused (the decision stays on Recent decisions),
    // so the toast does not cover the page for longer than it is useful.
    setTimeout(function () {
      toast.classList.add("expired");
      toast.hidden = true;
    }, Math.max(left, 0));
  }
  document.addEventListener("DOMContentLoaded", watchToast);
  document.addEventListener("htmx:oobAfterSwap", watchToast);
  document.addEventListener("htmx:afterSettle", watchToast);

  function showHint(text) {
    var box = document.getElementById("request-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
    clearTimeout(showHint.timer);
    showHint.timer = setTimeout(function () { box.hidden = true; }, 5000);
  }

  function toggleHelp() {
    var dialog = document.getElementById("keys-help");
    if (!dialog) return;
    if (dialog.open) dialog.close(); else dialog.showModal();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    var handled = true;
    switch (event.key) {
      case "j": move(1); break;
      case "k": move(-1); break;
      case "a": case "e": case "r": case "s": case "t": press(event.key); break;
      case "u": undo(); break;
      case "x":
        if (!current) move(0);
        var box = current && current.querySelector("input[type=checkbox]");
        if (box) box.checked = !box.checked;
        break;
      case "?": toggleHelp(); break;
      default: handled = false;
    }
    if (handled) event.preventDefault();
  });

  // A card that takes the focus another way (the skip link, Tab)
  // becomes the current one, so the next key acts on it.
  document.addEventListener("focusin", function (event) {
    var card = event.target.matches && event.target.matches("[data-card]:not(.decided)") ? event.target : null;
    if (card && card !== current) {
      if (current) current.classList.remove("current");
      current = card;
      card.classList.add("current");
    }
  });

  document.addEventListener("click", function (event) {
    if (event.target.closest("[data-help]")) toggleHelp();
    var card = event.target.closest("[data-card]");
    if (card && !card.classList.contains("decided")) {
      if (current) current.classList.remove("current");
      current = card;
      card.classList.add("current");
    }
  });

  // After htmx puts a new card in (htmx:load fires on new content, which is
  // in the document; swap events fire on the replaced, detached element): an
  // edit form takes focus (first field); a decided card passes the focus on
  // to the next pending one.
  document.addEventListener("htmx:load", function (event) {
    var swapped = event.target;
    if (!swapped || !swapped.matches || !swapped.matches("[data-card]")) return;
    if (swapped.classList.contains("editing")) {
      // htmx fires htmx:load only after its settle delay, so a reviewer who
      // is quick (or a slow phone) may already be typing in one of the
      // form's fields: moving the focus now would send the rest of the typing
      // elsewhere (a correction lost). Only an untouched form
      // gets the focus on its first field.
      var active = document.activeElement;
      if (active && active !== swapped && swapped.contains(active)) {
        if (current) current.classList.remove("current");
        current = swapped;
        swapped.classList.add("current");
        return;
      }
      // An edit form is taller than the card it replaces: show its top.
      focusCard(swapped, "start");
      var first = swapped.querySelector("input:not([disabled]):not([type=hidden]), textarea");
      if (first) first.focus({ preventScroll: true });
    } else if (swapped.classList.contains("decided")) {
      if (current && current.id !== swapped.id && document.body.contains(current)) return;
      var list = cards();
      var next = list.filter(function (c) {
        return c.compareDocumentPosition(swapped) & Node.DOCUMENT_POSITION_PRECEDING;
      })[0];
      focusCard(next || list[list.length - 1]);
      // In cards view the decided card (with its Undo) goes to the top of the
      // screen, so the next card starts right below it: on a phone that saved
      // the scroll back up to the next card's top that most decisions needed.
      if (next && !swapped.closest(".compact-list")) swapped.scrollIntoView({ block: "start", behavior: "auto" });
    } else if (current && current.id === swapped.id) {
      focusCard(swapped);
    }
  });

  // An edit form is replaced only by its own requests (its
  // submit, its Cancel). A late answer to an earlier request that targets the
  // same card (an "open" or a second "e" still in flight) would otherwise
  // swap a fresh, empty form over the one the reviewer is typing in.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    var from = event.detail.requestConfig && event.detail.requestConfig.elt;
    if (!target || !target.matches || !target.matches("[data-card].editing")) return;
    if (from && target.contains(from)) return;
    event.detail.shouldSwap = false;
  });

  // A failed htmx request must not look like nothing happened (a phone on a
  // train loses the network): say so, and that a reload shows the truth.
  function showError(text) {
    var box = document.getElementById("request-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
    clearTimeout(showError.timer);
    showError.timer = setTimeout(function () { box.hidden = true; }, 8000);
  }
  document.addEventListener("htmx:sendError", function () {
    showError("Could not reach Vetted. The decision may not have been saved; reload the page to see what stands.");
  });
  document.addEventListener("htmx:responseError", function (event) {
    showError("Vetted answered with an error (" + event.detail.xhr.status + "). Reload the page to see what stands.");
  });
})();

// ---- Triage: `j` on the last loaded card loads
// the next page ("Load more") and then moves on to its first card; `o` opens
// a line of the compact list into its full card (the line's own link).
(function () {
  "use strict";
  var waiting = false;

  function typing(event) {
    var tag = (event.target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable;
  }

  function pending() {
    return Array.prototype.slice.call(document.querySelectorAll("[data-card]:not(.decided)"));
  }

  // Capture phase: runs before the j/k handler above, so "past the last
  // card" is judged where the reviewer was, not where j already moved them.
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) return;
    var current = document.querySelector("[data-card].current");
    if (event.key === "o" && current) {
      var open = current.querySelector('[data-key="o"]');
      if (open) { event.preventDefault(); open.click(); }
      return;
    }
    if (event.key !== "j" || waiting) return;
    var list = pending();
    var more = document.getElementById("load-more");
    if (!list.length) {
      // No undecided card left on the page: j fetches the next page by
      // itself, or, with no next page but proposals still waiting (new ones
      // arrived, or an undo), reloads the inbox.
      event.preventDefault();
      event.stopImmediatePropagation();
      if (more) { waiting = true; more.click(); }
      else if (document.getElementById("triage") && parseInt((document.getElementById("pending-count") || {}).textContent, 10) > 0) {
        window.location.reload();
      }
      return;
    }
    if (!more || (current && list.indexOf(current) !== list.length - 1)) return;
    if (!current) return;
    waiting = true;
    more.click();
  }, true);

  // The keys page_keys names (reviews/vocabulary.py): n loads the next page
  // the way j past the last card does.
  document.addEventListener("vetted:next-page", function () {
    var more = document.getElementById("load-more");
    if (!more || waiting) return;
    waiting = true;
    more.click();
  });

  // The next page's cards arrive one htmx:load each; on the first, press j
  // again so the focus moves on to it.
  document.addEventListener("htmx:load", function (event) {
    if (!waiting || !event.target.matches || !event.target.matches("[data-card]")) return;
    waiting = false;
    setTimeout(function () {
      document.body.dispatchEvent(new KeyboardEvent("keydown", { key: "j", bubbles: true }));
    }, 0);
  });
  document.addEventListener("htmx:responseError", function () { waiting = false; });
  document.addEventListener("htmx:sendError", function () { waiting = false; });
})();

// ---- Ctrl+Enter (Cmd+Enter) sends an edit form from any of its
// fields, a textarea included (where Enter is a new line); and the bulk bar's
// height, measured into --bulkbar-height, so the page keeps that much room
// below its last card and focus never lands under the bar (site.css).
(function () {
  "use strict";
  document.addEventListener("keydown", function (event) {
    if (event.key !== "Enter" || !(event.ctrlKey || event.metaKey) || event.altKey) return;
    var form = event.target.form || (event.target.closest && event.target.closest("form"));
    if (!form || !form.querySelector("textarea")) return;
    event.preventDefault();
    // requestSubmit runs validation and fires "submit", which htmx handles.
    if (form.requestSubmit) form.requestSubmit(); else form.submit();
  });

  function watchBulkBar() {
    var bar = document.getElementById("bulk");
    if (!bar || !window.ResizeObserver) return;
    new ResizeObserver(function () {
      var height = bar.getBoundingClientRect().height;
      if (height) document.documentElement.style.setProperty("--bulkbar-height", Math.ceil(height) + "px");
    }).observe(bar);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watchBulkBar);
  else watchBulkBar();
})();

// ---- The desktop detail pane. At 75rem and wider
// the compact list shows the open card beside it (site.css). One card is open
// at a time: opening a line puts the card that was open back as its line.
// The current line opens by itself (j/k, Tab, a click on it), so the pane
// follows the selection; after a decision the next line opens. Each line's
// own link (hx-get of the card; without JS, ?expand=) does the opening.
(function () {
  "use strict";
  var wide = window.matchMedia("(min-width: 75rem)");
  var lines = {};  // card id -> the line's HTML, to put back when another opens
  var timer = null;

  function list() { return document.querySelector(".cards.compact-list"); }
  function split() { return wide.matches && !!list(); }

  function openCards(except) {
    return Array.prototype.filter.call(
      list().querySelectorAll(":scope > [data-card]:not(.line):not(.decided):not(.editing)"),
      // Not a card whose decision (a form) is on its way: folded back into its
      // line, the decision's answer would land on a card no longer on the page.
      // (Its hints loading are no reason to keep it open.)
      function (card) { return card !== except && lines[card.id] && !card.querySelector("form.htmx-request"); }
    );
  }

  function open(line) {
    clearTimeout(timer);
    if (!split() || !line || !line.classList.contains("line") || !document.body.contains(line)) return;
    var link = line.querySelector(".line-main");
    if (link) link.click();
  }

  // A line about to become its card: keep the line, to fold back to later.
  document.addEventListener("htmx:beforeSwap", function (event) {
    var target = event.detail.target;
    if (split() && target && target.matches && target.matches(".cards.compact-list > .line")) {
      lines[target.id] = target.outerHTML;
    }
  });

  document.addEventListener("htmx:load", function (event) {
    var card = event.target;
    if (card === document.body) { start(); return; }  // htmx has processed the page
    if (!split() || !card.matches || !card.matches(".cards.compact-list > [data-card]:not(.line)")) return;
    if (card.classList.contains("decided") || card.classList.contains("editing")) return;
    openCards(card).forEach(function (other) {
      var holder = document.createElement("div");
      holder.innerHTML = lines[other.id];
      var line = holder.firstElementChild;
      line.classList.remove("current");  // kept as it was when it opened, selected then
      delete lines[other.id];
      other.replaceWith(line);
      htmx.process(line);
    });
  });

  // The pane follows the current line (a short delay, so holding j does not
  // open every line it passes).
  document.addEventListener("focusin", function (event) {
    var line = event.target;
    if (!split() || !line.matches || !line.matches(".cards.compact-list > .line")) return;
    clearTimeout(timer);
    timer = setTimeout(function () { open(line); }, 120);
  });

  // With nothing open yet, the first line opens (no-JS: the ?expand= link).
  function start() {
    if (!split() || list().querySelector(":scope > [data-card]:not(.line):not(.decided)")) return;
    open(list().querySelector(":scope > .line"));
  }
})();

// ---- Behaviour that once sat in inline handlers (the Content-Security-Policy
// allows no inline script): data-select-on-click selects a field's whole text
// when clicked (a token to copy); data-confirm asks before a button submits.
(function () {
  "use strict";
  document.addEventListener("click", function (event) {
    var field = event.target.closest && event.target.closest("[data-select-on-click]");
    if (field && typeof field.select === "function") field.select();
    var button = event.target.closest && event.target.closest("[data-confirm]");
    if (button && !window.confirm(button.getAttribute("data-confirm"))) {
      event.preventDefault();
      event.stopImmediatePropagation();
    }
  }, true);
})();

// ---- The reviewer's day: keys beyond deciding (their letters come from
// reviews/vocabulary.py through base.html's data-keys): merge and reject as
// duplicate on the current card's hint, the next page, the filters, the view,
// and g then a letter to go to another page. Also: long bodies folded after a
// few lines with "Show all", and one Undo on the page (the newest decision's).
(function () {
  "use strict";
  var keys = {};
  try { keys = JSON.parse(document.body.getAttribute("data-keys") || "{}"); } catch (e) { keys = {}; }
  var going = false;

  function typing(event) {
    var tag = (event.target.tagName || "").toLowerCase();
    return tag === "input" || tag === "textarea" || tag === "select" || event.target.isContentEditable;
  }

  function say(text) {
    var box = document.getElementById("request-error");
    if (!box) return;
    box.textContent = text;
    box.hidden = false;
    clearTimeout(say.timer);
    say.timer = setTimeout(function () { box.hidden = true; }, 5000);
  }

  function currentCard() {
    return document.querySelector("[data-card].current:not(.decided)") || document.querySelector("[data-card]:not(.decided)");
  }

  function hintButton(kind, words) {
    var card = currentCard();
    if (!card) return;
    var button = card.querySelector('form[action$="/' + kind + '"] button[type=submit]');
    if (button) button.click();
    else say("No " + words + " on this card: a hint offers it only for a close match.");
  }

  function stepFilter(step) {
    var chips = Array.prototype.slice.call(document.querySelectorAll(".triage .chips a.chip:not(.on)"));
    if (!chips.length) return;
    var at = chips.findIndex(function (c) { return c.hasAttribute("aria-current"); });
    var next = chips[Math.min(Math.max((at < 0 ? 0 : at) + step, 0), chips.length - 1)];
    if (next && next !== chips[at]) next.click();
  }

  function openFilters(focusSearch) {
    var more = document.querySelector("details.more-filters");
    if (!more) return;
    if (!focusSearch && more.open) { more.open = false; return; }
    more.open = true;
    var field = more.querySelector(focusSearch ? "input[name=q]" : "input, select");
    if (field) field.focus();
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event)) { going = false; return; }
    if (document.querySelector("dialog[open]")) return;
    var key = event.key;
    if (going) {
      going = false;
      var url = (keys.pages || {})[key];
      event.preventDefault();
      event.stopImmediatePropagation();
      if (url) window.location.assign(url);
      return;
    }
    var handled = true;
    if (key === keys.go) going = true;
    else if (key === keys.merge) hintButton("merge", "merge");
    else if (key === keys.duplicate) hintButton("reject-duplicate", "reject as duplicate");
    else if (key === keys.next_page) document.dispatchEvent(new CustomEvent("vetted:next-page"));
    else if (key === keys.search) openFilters(true);
    else if (key === keys.filters) openFilters(false);
    else if (key === keys.next_filter) stepFilter(1);
    else if (key === keys.previous_filter) stepFilter(-1);
    else if (key === keys.view) { var v = document.getElementById("view-switch"); if (v) v.click(); }
    else handled = false;
    if (handled) { event.preventDefault(); event.stopImmediatePropagation(); }
  }, true);

  // ---- Long bodies: folded after a few lines (site.css .fold.folded), with
  // a "Show all" button; without JavaScript the whole body shows.
  function fold(root) {
    if (!root || !root.querySelectorAll) return;
    var bodies = root.querySelectorAll("[data-card]:not(.editing):not(.decided) > .md, [data-card]:not(.editing):not(.decided) > .diff");
    Array.prototype.forEach.call(bodies, function (body) {
      if (body.dataset.folding) return;
      body.dataset.folding = "1";
      body.classList.add("fold", "folded");
      // Only worth a button when it hides more than a couple of lines.
      if (body.scrollHeight <= body.clientHeight + 40) { body.classList.remove("fold", "folded"); return; }
      if (!body.id) body.id = "body-" + Math.random().toString(36).slice(2, 10);
      var button = document.createElement("button");
      button.type = "button";
      button.className = "link show-all";
      button.setAttribute("aria-expanded", "false");
      button.setAttribute("aria-controls", body.id);
      button.textContent = "Show all";
      body.insertAdjacentElement("afterend", button);
    });
  }
  function unfold(body, button) {
    body.classList.remove("folded");
    if (button) { button.setAttribute("aria-expanded", "true"); button.textContent = "Show less"; }
  }
  document.addEventListener("click", function (event) {
    var button = event.target.closest && event.target.closest("button.show-all");
    if (!button) return;
    var body = document.getElementById(button.getAttribute("aria-controls"));
    if (!body) return;
    if (body.classList.contains("folded")) unfold(body, button);
    else { body.classList.add("folded"); button.setAttribute("aria-expanded", "false"); button.textContent = "Show all"; }
  });
  // A link or code block inside a folded body that takes the focus unfolds it.
  document.addEventListener("focusin", function (event) {
    var body = event.target.closest && event.target.closest(".fold.folded");
    if (body) unfold(body, document.querySelector('button.show-all[aria-controls="' + body.id + '"]'));
  });

  // ---- One Undo: a decided card that brings its own drops any older one.
  function newestUndo(root) {
    if (!root || !root.querySelector) return;
    var mine = root.matches && root.matches(".undo-toast") ? root : root.querySelector(".undo-toast");
    if (!mine) return;
    Array.prototype.forEach.call(document.querySelectorAll(".undo-toast"), function (toast) {
      if (toast !== mine) toast.remove();
    });
  }

  document.addEventListener("htmx:load", function (event) { fold(event.target); newestUndo(event.target); });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", function () { fold(document); });
  else fold(document);
})();
