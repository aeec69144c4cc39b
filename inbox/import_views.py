"""Upload instruction files (CLAUDE.md, AGENTS.md, .mdc rules, ...) to turn
them into proposals. Uploads only: the server never reads a path typed into
a form. The files go to a private temporary folder, are read by the same
import as ``manage.py import_instructions`` (so ``@path`` imports resolve only
among the uploaded files), and the folder is removed. Nothing is approved
here: the answer links each file's proposals in the inbox."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from portability import instructions
from portability.markdown_io.notes import MAX_FILE_BYTES
from reviews.errors import VettedError

from . import viewer
from .page_helpers import nav_counts, site_login_required

MAX_UPLOADS = 50


def _spaces() -> list[str]:
    return viewer.deciding() or []


def _save(uploads, folder: Path) -> tuple[list[str], list[dict[str, str]]]:
    """Write each upload under its own base name; refuse what is too big or named twice."""
    saved: list[str] = []
    refused: list[dict[str, str]] = []
    for upload in uploads[:MAX_UPLOADS]:
        name = Path(upload.name or "").name.strip()
        if not name or name in (".", ".."):
            refused.append({"file": upload.name or "(no name)", "reason": "has no file name"})
            continue
        if upload.size > MAX_FILE_BYTES:
            refused.append({"file": name, "reason": f"too long ({upload.size} bytes; at most {MAX_FILE_BYTES})"})
            continue
        if name in saved:
            refused.append({"file": name, "reason": "a second file with this name; upload it on its own"})
            continue
        with (folder / name).open("wb") as out:
            for chunk in upload.chunks():
                out.write(chunk)
        saved.append(name)
    for upload in uploads[MAX_UPLOADS:]:
        refused.append({"file": Path(upload.name or "").name, "reason": f"more than {MAX_UPLOADS} files at once"})
    return saved, refused


@site_login_required
@require_http_methods(["GET", "POST"])
def upload(request):
    spaces = _spaces()
    context: dict = {
        **nav_counts(),
        "nav": "agents",
        "spaces": spaces,
        "max_uploads": MAX_UPLOADS,
        "max_bytes": MAX_FILE_BYTES,
    }
    if request.method == "POST":
        space = request.POST.get("space", "")
        files = request.FILES.getlist("files")
        if space not in spaces:
            context["error"] = f"Choose one of the spaces you decide in: {', '.join(spaces) or 'none'}."
        elif not files:
            context["error"] = "Choose at least one file to upload."
        else:
            with tempfile.TemporaryDirectory(prefix="vetted-upload-") as folder:
                saved, refused = _save(files, Path(folder))
                try:
                    outcome = instructions.import_instructions([folder], space=space, any_name=True) if saved else None
                except VettedError as exc:
                    context["error"] = exc.message
                    outcome = None
            context.update(outcome=outcome, refused=refused + (outcome.refused if outcome else []), space=space)
        return render(request, "reviews/import_instructions.html", context, status=400 if "error" in context else 200)
    return render(request, "reviews/import_instructions.html", context)
