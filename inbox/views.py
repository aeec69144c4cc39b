"""The account pages: first run, and the sign-in lockout page. (The home page
is the inbox: inbox/inbox_views.py.)

Views are thin: check access, call one action, render or redirect.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import get_user_model, login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from reviews import actions, lockouts, setup_code
from reviews.errors import InvalidTransition, ValidationFailed


@require_http_methods(["GET", "POST"])
def first_run(request):
    if get_user_model().objects.exists():
        setup_code.discard()  # e.g. the account came from createsuperuser
        return redirect("home")
    remote = request.META.get("REMOTE_ADDR", "")
    context = {
        "local": actions.is_loopback(remote),
        "errors": {},
        "username": "",
        "code": request.GET.get("code", "")[:100],
        "code_path": setup_code.path(),
    }
    if context["local"]:
        setup_code.ensure()  # so there is a code to find, whoever started the server
    if request.method == "POST":
        context["username"] = request.POST.get("username", "")
        context["code"] = request.POST.get("code", "")[:100]
        if request.POST.get("password") != request.POST.get("password2"):
            context["errors"] = {"password2": "the two passwords differ"}
        else:
            try:
                user = actions.create_first_reviewer(
                    username=request.POST.get("username", ""),
                    password=request.POST.get("password", ""),
                    email=request.POST.get("email", ""),
                    remote_addr=remote,
                    setup_code=context["code"],
                )
            except ValidationFailed as exc:
                context["errors"] = exc.fields
            except InvalidTransition as exc:
                context["errors"] = {"form": exc.message}
            else:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")  # type: ignore[arg-type]  # the configured User
                return redirect("home")
    status = 200 if context["local"] else 403
    return render(request, "reviews/first_run.html", context, status=status)


def lockout_response(request, original_response=None, credentials=None):
    """What axes answers a locked-out sign-in with (AXES_LOCKOUT_CALLABLE): 429
    and a page that says why, for how long, and how the reviewer clears it."""
    username = ((credentials or {}).get("username") or request.POST.get("username", ""))[:150]
    context = {
        "minutes": lockouts.minutes(),
        "failures": settings.AXES_FAILURE_LIMIT,
        "username": username,
        "command": lockouts.how_to_clear(username=username),
        "wait": getattr(request, "vetted_login_wait", 0),
        "slowdown_seconds": settings.VETTED_LOGIN_SLOWDOWN_SECONDS,
    }
    return render(request, "registration/locked_out.html", context, status=429)
