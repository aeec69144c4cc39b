"""The first-run account page. (The home page is the inbox: reviews/inbox/inbox_views.py.)

Views are thin: check access, call one action, render or redirect.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model, login
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from reviews import actions
from reviews.errors import InvalidTransition, ValidationFailed


@require_http_methods(["GET", "POST"])
def first_run(request):
    if get_user_model().objects.exists():
        return redirect("home")
    remote = request.META.get("REMOTE_ADDR", "")
    context = {"local": actions.is_loopback(remote), "errors": {}, "username": ""}
    if request.method == "POST":
        context["username"] = request.POST.get("username", "")
        if request.POST.get("password") != request.POST.get("password2"):
            context["errors"] = {"password2": "the two passwords differ"}
        else:
            try:
                user = actions.create_first_reviewer(
                    username=request.POST.get("username", ""), password=request.POST.get("password", ""),
                    email=request.POST.get("email", ""), remote_addr=remote,
                )
            except ValidationFailed as exc:
                context["errors"] = exc.fields
            except InvalidTransition as exc:
                context["errors"] = {"form": exc.message}
            else:
                login(request, user, backend="django.contrib.auth.backends.ModelBackend")
                return redirect("home")
    status = 200 if context["local"] else 403
    return render(request, "reviews/first_run.html", context, status=status)
