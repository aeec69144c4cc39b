"""The channels: what a message looks like in each format, and how it is sent.

A message is a frozen payload (``notify.sender`` makes it): its event, when
it was made, a summary line made of counts, and items of id, title, agent
and action. Titles are agent-written text, so every format cleans them
(``clean_text``: no control characters or line breaks, cut to TITLE_CUT)
and then escapes them its own way. No body, reason or token is ever in a
payload, so none can reach a channel.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import unicodedata
import urllib.error
import urllib.request
from typing import Any

from django.conf import settings
from django.core.mail import EmailMultiAlternatives
from django.template.loader import render_to_string

from .models import Channel, Event

TITLE_CUT = 120
MAX_ITEMS_LISTED = 20  # a message names at most this many items, then "and N more"
TIMEOUT = 10

# Where each event is worked on: the "filtered inbox" a message links to.
_PAGES: dict[str, str] = {
    Event.PROPOSAL_CREATED: "/",
    Event.DISPUTE_CREATED: "/disputed/",
    Event.RECORD_DUE: "/due/",
    Event.RECORD_CHANGED_OUTSIDE: "/edited/",
    Event.DIGEST: "/",
}


class SendFailed(Exception):
    """A channel did not take the message (the text is shown on the settings page)."""


def clean_text(text: str, limit: int = TITLE_CUT) -> str:
    """One line of at most ``limit`` characters: control and format
    characters (line breaks, bidi overrides, zero-width) dropped or made
    spaces, runs of white space collapsed."""
    out = []
    for ch in str(text or "")[: limit * 4]:
        category = unicodedata.category(ch)
        if category in ("Cc", "Zl", "Zp") or ch.isspace():
            out.append(" ")
        elif category in ("Cf", "Cs", "Co", "Cn"):
            continue
        else:
            out.append(ch)
    line = " ".join("".join(out).split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def inbox_url(event: str) -> str:
    return settings.VETTED_PUBLIC_URL + _PAGES.get(event, "/")


def configured() -> list[str]:
    """The channels whose variables are set, in sending order."""
    found: list[str] = []
    if settings.VETTED_WEBHOOK_URL:
        found.append(Channel.WEBHOOK)
    if settings.VETTED_NOTIFY_EMAIL:
        found.append(Channel.EMAIL)
    return found


def _items(payload: dict[str, Any]) -> list[dict[str, str]]:
    return [
        {
            "id": clean_text(item.get("id", ""), 24),
            "title": clean_text(item.get("title", "")),
            "agent": clean_text(item.get("agent", ""), 64),
            "action": clean_text(item.get("action", ""), 32),
        }
        for item in payload.get("items", [])
    ]


def _line(item: dict[str, str]) -> str:
    who = f" ({item['agent']})" if item["agent"] else ""
    what = item["title"] or item["id"]
    return f"{item['action']}: {what}{who}"


def _listed(payload: dict[str, Any]) -> tuple[list[dict[str, str]], int]:
    items = _items(payload)
    return items[:MAX_ITEMS_LISTED], max(0, len(items) - MAX_ITEMS_LISTED)


# --------------------------------------------------------------------------- webhook formats


def webhook_request(delivery_id: str, payload: dict[str, Any], fmt: str | None = None) -> tuple[bytes, dict[str, str]]:
    """The raw body and headers of a webhook request in ``fmt`` (json, ntfy, slack)."""
    fmt = fmt or settings.VETTED_WEBHOOK_FORMAT
    event = payload["event"]
    url = inbox_url(event)
    summary = clean_text(payload.get("summary", ""), 200)
    headers = {"X-Vetted-Delivery": delivery_id, "User-Agent": "Vetted-notify"}
    if fmt == "json":
        body = {
            "id": delivery_id,
            "event": event,
            "created_at": payload["created_at"],
            "inbox_url": url,
            "items": _items(payload),
        }
        raw = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
        headers["Content-Type"] = "application/json"
    elif fmt == "ntfy":
        # Plain text (no X-Markdown header, so ntfy shows it literally);
        # the headers hold only our own ASCII words and the inbox URL.
        listed, more = _listed(payload)
        lines = [_line(item) for item in listed] + ([f"and {more} more"] if more else [])
        raw = "\n".join(lines).encode()
        headers.update(
            {
                "Content-Type": "text/plain; charset=utf-8",
                "Title": summary.encode("ascii", "replace").decode(),
                "Click": url,
                "Tags": "warning" if event == Event.DISPUTE_CREATED else "inbox_tray",
                "Priority": "high" if event == Event.DISPUTE_CREATED else "default",
            }
        )
    elif fmt == "slack":
        listed, more = _listed(payload)
        lines = [f"*{_slack(summary)}* <{url}|Open the inbox>"]
        for item in listed:
            who = f" by {_slack_code(item['agent'])}" if item["agent"] else ""
            lines.append(f"• {item['action']}: {_slack_code(item['title'] or item['id'])}{who}")
        if more:
            lines.append(f"and {more} more")
        raw = json.dumps({"text": "\n".join(lines)}, ensure_ascii=False).encode()
        headers["Content-Type"] = "application/json"
    else:
        raise SendFailed(f"unknown webhook format {fmt!r}")
    secret = settings.VETTED_WEBHOOK_SECRET
    if secret:
        digest = hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
        headers["X-Vetted-Signature"] = f"sha256={digest}"
    return raw, headers


def _slack(text: str) -> str:
    """Slack's three escapes (so no <!channel>, <@user> or link can be written)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _slack_code(text: str) -> str:
    """Agent text as inline code: no bold, links or mentions (Slack, Mattermost,
    Discord). A backtick would end the span, so it becomes a look-alike."""
    return "`" + _slack(text.replace("`", "ˋ")) + "`" if text else ""


def send_webhook(delivery_id: str, payload: dict[str, Any]) -> None:
    raw, headers = webhook_request(delivery_id, payload)
    request = urllib.request.Request(settings.VETTED_WEBHOOK_URL, data=raw, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:  # noqa: S310 - the operator's URL
            status = response.status
    except urllib.error.HTTPError as exc:
        raise SendFailed(f"the webhook answered HTTP {exc.code}") from None
    except (urllib.error.URLError, OSError) as exc:
        # Never the URL: a Slack or ntfy URL is itself a secret.
        reason = getattr(exc, "reason", exc)
        raise SendFailed(f"the webhook could not be reached: {clean_text(str(reason), 200)}") from None
    if not 200 <= status < 300:
        raise SendFailed(f"the webhook answered HTTP {status}")


# --------------------------------------------------------------------------- email


def email_message(delivery_id: str, payload: dict[str, Any]) -> EmailMultiAlternatives:
    """Plain text plus HTML (autoescaped template), one link to the inbox."""
    listed, more = _listed(payload)
    context = {
        "summary": clean_text(payload.get("summary", ""), 200),
        "items": listed,
        "more": more,
        "inbox_url": inbox_url(payload["event"]),
        "delivery_id": delivery_id,
    }
    text = render_to_string("notify/email.txt", context)
    html = render_to_string("notify/email.html", context)
    message = EmailMultiAlternatives(
        subject=f"Vetted: {context['summary']}",
        body=text,
        from_email=settings.DEFAULT_FROM_EMAIL,
        # A message made per person (notify/recipients.py) carries its addresses.
        to=list(payload.get("to") or settings.VETTED_NOTIFY_EMAIL),
        headers={"X-Vetted-Delivery": delivery_id, "Message-ID": f"<{delivery_id}@vetted>"},
    )
    message.attach_alternative(html, "text/html")
    return message


def send_email(delivery_id: str, payload: dict[str, Any]) -> None:
    try:
        sent = email_message(delivery_id, payload).send(fail_silently=False)
    except Exception as exc:  # smtplib, ssl and socket errors alike
        raise SendFailed(f"the mail server refused or could not be reached: {clean_text(str(exc), 200)}") from None
    if not sent:
        raise SendFailed("the mail server accepted no recipient")


def send(channel: str, delivery_id: str, payload: dict[str, Any]) -> None:
    """Send one message; raises SendFailed."""
    if channel == Channel.WEBHOOK:
        send_webhook(delivery_id, payload)
    elif channel == Channel.EMAIL:
        send_email(delivery_id, payload)
    else:
        raise SendFailed(f"unknown channel {channel!r}")


__all__ = ["SendFailed", "clean_text", "configured", "email_message", "send", "webhook_request"]
