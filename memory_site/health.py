"""GET /health: is the daemon up, which model, how much memory. No auth, no secrets."""

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from memory_site import __version__
from retrieval import embeddings, index
from reviews.models import Proposal, ProposalState, Record, RecordStatus


@require_GET
def health(request):
    approved = Record.objects.filter(status=RecordStatus.APPROVED)
    meta = index.read_meta()
    loaded = embeddings.loaded_embedder()
    return JsonResponse(
        {
            "status": "ok",
            "version": __version__,
            "model": {
                "configured": loaded.name if loaded else (settings.VETTED_MODEL_NAME or settings.VETTED_EMBEDDER),
                "loaded": loaded is not None,
                "index": meta.get("model_name"),
                "dimension": int(meta["dimension"]) if "dimension" in meta else None,
            },
            "records": {
                "approved": approved.count(),
                "overdue": Record.objects.overdue().count(),
                "disputed": Record.objects.filter(status=RecordStatus.DISPUTED).count(),
                "total": Record.objects.count(),
            },
            "pending_proposals": Proposal.objects.filter(state=ProposalState.PENDING).count(),
            "index_queue": index.pending_count(),
        }
    )
