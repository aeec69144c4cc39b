"""What `manage.py bench_review` measures in the page: the browser sizes,
the scripts it runs in Chromium (whole cards in the first screen, scrolls to
reveal a card and a control, controls under the Undo toast, htmx settled), and
the server-time recorder around Django's handler. The browser tests use the
same scripts."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking", "--no-first-run"]
PHONE: dict[str, Any] = {
    "viewport": {"width": 390, "height": 844},
    "is_mobile": True,
    "has_touch": True,
    "device_scale_factor": 3,
    "reduced_motion": "reduce",
}
DESKTOP: dict[str, Any] = {"viewport": {"width": 1280, "height": 800}, "reduced_motion": "reduce"}
SIZES = {"phone": PHONE, "desktop": DESKTOP}
# The view each size works in unless --view says: the compact list on a phone,
# cards on a desktop (its compact list is a split pane that opens by itself).
DEFAULT_VIEW = {"phone": "compact", "desktop": "cards"}
# Whole cards (or lines) inside the first screen: top and bottom both within it.
WHOLE_IN_FIRST_SCREEN = """() => [...document.querySelectorAll('[data-card]')]
    .filter(c => { const r = c.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }).length"""
# The height of what stays on screen over the page (a sticky header).
_TOP_INSET = """(() => { const h = document.querySelector('header.site');
    if (!h) return 0; const p = getComputedStyle(h).position;
    return p === 'sticky' || p === 'fixed' ? Math.max(0, h.getBoundingClientRect().bottom) : 0; })()"""
# Bring a card's top and its decision controls into view as a reviewer would,
# and say how many scrolls that took: 0 (both in view), 1 (one move shows both)
# or 2 (a card taller than the screen: read from its top, then down to its controls).
REVEAL = (
    """id => { const c = document.getElementById(id);
    const a = c.querySelector(':scope > .actions, :scope > .line-actions') || c;
    const top = """
    + _TOP_INSET
    + """, bottom = innerHeight;
    const cr = c.getBoundingClientRect(), ar = a.getBoundingClientRect();
    if (cr.top >= top && ar.bottom <= bottom) return 0;
    if (ar.bottom - cr.top <= bottom - top) {
        window.scrollBy(0, cr.top < top ? cr.top - top : ar.bottom - bottom);
        return 1;
    }
    window.scrollBy(0, ar.bottom - bottom);
    return 2; }"""
)
# Is this element (a control a step is about to tap) wholly in view? If not,
# scroll it to the middle of the screen (one scroll) and say so.
REVEAL_CONTROL = (
    """el => { const top = """
    + _TOP_INSET
    + """; const r = el.getBoundingClientRect();
    if (r.top >= top && r.bottom <= innerHeight) return 0;
    el.scrollIntoView({block: 'center'}); return 1; }"""
)
# Controls the Undo toast covers: a control (outside the toast) whose box meets
# the toast's, where the toast is what lies on top.
TOAST_COVERS = """() => { const t = document.getElementById('undo-toast');
    if (!t || t.hidden) return 0;
    const r = t.getBoundingClientRect(); if (!r.width || !r.height) return 0;
    let n = 0;
    const controls = 'button, a[href], summary, input:not([type=hidden]), select, textarea';
    for (const el of document.querySelectorAll(controls)) {
        // Not the toast's own controls, nor one not rendered (in a closed <details>).
        if (t.contains(el) || (el.checkVisibility && !el.checkVisibility())) continue;
        const b = el.getBoundingClientRect();
        if (!b.width || !b.height || b.bottom <= 0 || b.top >= innerHeight) continue;
        const left = Math.max(b.left, r.left), right = Math.min(b.right, r.right);
        const up = Math.max(b.top, r.top), down = Math.min(b.bottom, r.bottom);
        if (left >= right || up >= down) continue;
        const hit = document.elementFromPoint((left + right) / 2, (up + down) / 2);
        if (hit && t.contains(hit)) n++;
    }
    return n; }"""
# True once htmx has processed the card's controls (its internal data on them).
SETTLED = """id => [...document.querySelectorAll('#' + id + ' [hx-get], #' + id + ' [hx-post]')]
    .every(el => el['htmx-internal-data'] && el['htmx-internal-data'].initHash)"""


def p95(values: list[float]) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(0.95 * (len(values) - 1))))] if values else 0.0


class Timed:
    """Wraps the live server's WSGI handler: (method, path, ms, status) of
    every request (the status for a failed run's report)."""

    def __init__(self, app):
        self.app, self.log = app, []

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = ["?"]

        def recording(code, headers, *exc_info):
            status[0] = code
            return start_response(code, headers, *exc_info)

        try:
            return list(self.app(environ, recording))
        finally:
            ms = (time.perf_counter() - started) * 1000
            self.log.append((environ["REQUEST_METHOD"], environ["PATH_INFO"], ms, status[0]))


HINTS_IN = "id => !document.querySelector('#' + id + ' [data-hints=\"loading\"]')"
