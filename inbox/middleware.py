from django.contrib.auth import get_user_model
from django.shortcuts import redirect
from django.urls import reverse

from common import textsafety

_user_exists = False  # once true it stays true; users are never all deleted in normal use


class FirstRunMiddleware:
    """Until a reviewer account exists, every page leads to the setup page."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        global _user_exists
        if not _user_exists:
            setup_url = reverse("first_run")
            exempt = request.path.startswith(("/static/", "/health", "/api/", setup_url))
            if not exempt:
                if get_user_model().objects.exists():
                    _user_exists = True
                else:
                    return redirect(setup_url)
        return self.get_response(request)


class VisibleTextMiddleware:
    """Every HTML page shows each character a reviewer cannot see as a marked
    ⟨U+XXXX⟩ (common.textsafety.mark_invisible_html), never as nothing,
    whichever template, filter or field put it there: records and proposals
    stored before such characters were refused, Markdown character references,
    the word diff, the admin. Pages without any cost one regex scan."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(response, "streaming", False) or not response.get("Content-Type", "").startswith("text/html"):
            return response
        charset = response.charset or "utf-8"
        page = response.content.decode(charset)
        marked = textsafety.mark_invisible_html(page)
        if marked is not page:
            response.content = marked.encode(charset)
            if response.has_header("Content-Length"):
                response["Content-Length"] = str(len(response.content))
        return response
