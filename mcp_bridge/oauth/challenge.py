"""What a 401 from /mcp or /api/v1 says (WWW-Authenticate) and where the
OAuth metadata lives. Kept apart from app.py, which wires the MCP SDK's
handlers: the REST authentication class imports this, DRF imports that class
whenever its settings load (the system checks included), and a command line
that starts in well under a second cannot pay for importing the SDK."""

from __future__ import annotations

from django.conf import settings

WELL_KNOWN_AS = "/.well-known/oauth-authorization-server"
WELL_KNOWN_PR = "/.well-known/oauth-protected-resource"


def resource_metadata_url(endpoint_path: str) -> str:
    """Where an endpoint's RFC 9728 metadata is (for WWW-Authenticate)."""
    return settings.VETTED_PUBLIC_URL + WELL_KNOWN_PR + endpoint_path


def challenge(endpoint_path: str, error: str = "", description: str = "") -> str:
    """The WWW-Authenticate value of a 401 from /mcp or /api: Bearer, with the
    resource metadata URL a client starts its OAuth discovery from."""
    parts = ['Bearer realm="vetted"', f'resource_metadata="{resource_metadata_url(endpoint_path)}"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append('error_description="{}"'.format(description.replace('"', "'").replace("\\", "/")))
    return ", ".join(parts)
