"""The first authentication backend: axes' lockout of a (username, address)
pair, then the slow-down of a username under attack (reviews/lockouts.py).
Both refuse before any password is hashed."""

from __future__ import annotations

from axes.backends import AxesStandaloneBackend
from axes.exceptions import AxesBackendPermissionDenied

from . import lockouts


class ThrottledAxesBackend(AxesStandaloneBackend):
    def authenticate(self, request, username=None, password=None, **kwargs):
        super().authenticate(request, username, password, **kwargs)  # raises for a locked pair
        if request is None or not username:
            return None
        wait = lockouts.slowdown_seconds(username, getattr(request, "axes_ip_address", None))
        if wait:
            # Marked as axes marks a lockout, so the refusal is neither
            # counted nor stored and the lockout page says how long to wait.
            request.vetted_login_wait = wait
            request.axes_locked_out = True
            raise AxesBackendPermissionDenied("this username is slowed down after failures from many addresses")
        return None
