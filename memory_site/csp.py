"""The Content-Security-Policy of every page Django answers.

A small middleware rather than django-csp: the site needs one fixed policy
and two variations chosen by path, no nonces (no page has an inline script:
handlers live in static/vetted/keys.js, htmx's injected indicator style and
eval are off in base.html) and no per-view decorators, so a dependency would
add configuration, not safety.

- The site and the admin: scripts, styles, fonts, images (and data: images),
  fetches and the manifest from this origin only; no plugins, no <base>, no
  framing, forms post to this origin.
- The OAuth consent page: the same, without ``form-action``: its "Allow"
  answers with a redirect to the client's own redirect URI (another origin,
  or a loopback port), and browsers apply form-action to that redirect.
- Swagger UI (/api/v1/docs, drf-spectacular's split view, so every script is
  a file): its page carries an inline <style> and React sets style
  attributes, so styles may be inline there; scripts still may not.
"""

from __future__ import annotations

_COMMON = [
    "default-src 'self'",
    "script-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
]
SITE = "; ".join([*_COMMON, "style-src 'self'", "form-action 'self'"])
CONSENT = "; ".join([*_COMMON, "style-src 'self'"])
API_DOCS = "; ".join([*_COMMON, "style-src 'self' 'unsafe-inline'", "form-action 'self'"])

CONSENT_PATH = "/oauth/consent"
API_DOCS_PATH = "/api/v1/docs"


def policy_for(path: str) -> str:
    if path == CONSENT_PATH or path.startswith(CONSENT_PATH + "/"):
        return CONSENT
    if path == API_DOCS_PATH:
        return API_DOCS
    return SITE


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = policy_for(request.path)
        return response
