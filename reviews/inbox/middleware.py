from django.contrib.auth import get_user_model
from django.shortcuts import redirect
from django.urls import reverse

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
