"""The Content-Security-Policy: every page carries one that allows no inline
script, and no template needs one (no inline <script>, no on*= handler, no
javascript: URL). The browser pass, with Chromium reporting violations, is
tests/test_pages_browser.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_site import csp

pytestmark = pytest.mark.django_db

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def directives(header: str) -> dict[str, list[str]]:
    parts = [part.strip().split() for part in header.split(";") if part.strip()]
    return {part[0]: part[1:] for part in parts}


@pytest.mark.parametrize("policy", [csp.SITE, csp.CONSENT, csp.API_DOCS])
def test_no_policy_allows_inline_or_eval_script(policy):
    found = directives(policy)
    assert found["script-src"] == ["'self'"] and found["object-src"] == ["'none'"]
    assert found["base-uri"] == ["'none'"] and found["frame-ancestors"] == ["'none'"]


@pytest.mark.parametrize(
    "path", ["/", "/records/", "/agents/", "/settings/", "/decisions/", "/quality/", "/due/", "/admin/"]
)
def test_every_site_page_carries_the_site_policy(signed_in, path):
    response = signed_in.get(path)
    assert response.status_code == 200
    assert response["Content-Security-Policy"] == csp.SITE
    assert "'unsafe-inline'" not in response["Content-Security-Policy"]


@pytest.mark.parametrize("path", ["/accounts/login/", "/health", "/api/v1/schema"])
def test_pages_without_credentials_carry_it_too(client, reviewer, path):
    assert client.get(path)["Content-Security-Policy"] == csp.SITE


def test_the_consent_page_may_redirect_its_form_to_the_client():
    found = directives(csp.CONSENT)
    assert "form-action" not in found and found["style-src"] == ["'self'"]


def test_swagger_ui_has_its_own_policy_and_no_inline_script(client):
    response = client.get("/api/v1/docs")
    assert response.status_code == 200 and response["Content-Security-Policy"] == csp.API_DOCS
    html = response.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script on the Swagger UI page"
    script = re.search(r'<script src="([^"]*\?script[^"]*)"', html).group(1).replace("&amp;", "&")
    answer = client.get(script)
    assert answer.status_code == 200 and "SwaggerUIBundle" in answer.content.decode()


INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>", re.IGNORECASE)
HANDLER = re.compile(r"""\son[a-z]+\s*=\s*["']""", re.IGNORECASE)
JS_URL = re.compile(r"javascript:", re.IGNORECASE)


@pytest.mark.parametrize("template", sorted(TEMPLATES.rglob("*.html")), ids=lambda p: str(p.relative_to(TEMPLATES)))
def test_no_template_has_inline_script_handlers_or_javascript_urls(template):
    text = template.read_text()
    assert not INLINE_SCRIPT.search(text), "inline <script>"
    assert not HANDLER.search(text), "an on*= handler attribute"
    assert not JS_URL.search(text), "a javascript: URL"


def test_htmx_injects_no_style_and_evaluates_nothing(signed_in):
    html = signed_in.get("/").content.decode()
    config = re.search(r"""<meta name="htmx-config" content='([^']*)'>""", html).group(1)
    assert '"includeIndicatorStyles": false' in config and '"allowEval": false' in config
    css = (Path(__file__).resolve().parent.parent / "static" / "vetted" / "site.css").read_text()
    assert ".htmx-request .htmx-indicator" in css
