"""The one ASGI application `manage.py serve` runs: the Django site (with its
static files) and, from the gateway issue on, MCP at /mcp."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.asgi import get_asgi_application  # noqa: E402

# Static files (CSS, vendored JS, the admin's) are served by the app itself:
# Vetted is a local, single-process server with no web server in front.
django_app = ASGIStaticFilesHandler(get_asgi_application())


async def _lifespan(receive, send):
    # Django's ASGI handler refuses lifespan events; uvicorn sends them at
    # start and stop. Acknowledge them here (the MCP app will hook in here).
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


async def application(scope, receive, send):
    if scope["type"] == "lifespan":
        return await _lifespan(receive, send)
    return await django_app(scope, receive, send)
