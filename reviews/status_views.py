"""Settings and health: the model, the index, the database file, backups."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memory_site import __version__
from retrieval import embeddings, index

from .page_helpers import nav_counts, site_login_required


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


@site_login_required
@require_GET
def site_settings(request):
    db = Path(settings.DATABASES["default"]["NAME"])
    loaded = embeddings.loaded_embedder()
    report = index.check()  # read-only: lists problems, fixes nothing
    return render(request, "reviews/settings.html", {
        **nav_counts(), "nav": "settings", "version": __version__, "report": report,
        "model_configured": settings.VETTED_MODEL_NAME or settings.VETTED_EMBEDDER,
        "model_loaded": loaded.name if loaded else "",
        "db_path": db, "db_size": _size(db), "wal_size": _size(Path(f"{db}-wal")),
        "home": settings.VETTED_HOME, "kinds": sorted(settings.VETTED_KINDS.items()),
    })
