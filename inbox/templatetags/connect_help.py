"""{% connect_help %}: how to connect an agent, for the empty inbox and the
agents page: the `connect` command for clients
on this machine, and the MCP URL remote clients sign in to with OAuth."""

import sys
from urllib.parse import urlsplit

from django import template
from django.conf import settings

register = template.Library()

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


@register.inclusion_tag("reviews/_connect_help.html")
def connect_help(heading: str = "Connect an agent") -> dict:
    public = settings.VETTED_PUBLIC_URL
    return {
        "heading": heading,
        "python": sys.executable,
        "project": settings.BASE_DIR,
        "mcp_url": public + "/mcp",
        "loopback": (urlsplit(public).hostname or "") in _LOOPBACK,
    }
