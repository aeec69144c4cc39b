"""GET /health: is the daemon up, and (for the operator) what it holds.

Without credentials it says only that this is Vetted, that it is up, and its
version: anyone who can reach the port may ask, and counts of records and
proposals across every space would let them watch another space's activity.
The counts, the model and the index queue are instance-wide, so they need the
operator: a signed-in, active superuser (a session cookie; an agent's token
never opens them). Anything else gets the short answer, never an error, so a
monitor keeps working whoever asks.
"""

from django.conf import settings
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from common import __version__
from common.listening import SERVICE, is_vetted  # noqa: F401  (is_vetted: re-exported for callers)


def public_answer() -> dict:
    return {"status": "ok", "service": SERVICE, "version": __version__}


def _operator_answer() -> dict:
    from retrieval import embeddings, index
    from reviews.models import Proposal, ProposalState, Record, RecordStatus

    meta = index.read_meta()
    loaded = embeddings.loaded_embedder()
    return {
        "model": {
            "configured": loaded.name if loaded else (settings.VETTED_MODEL_NAME or settings.VETTED_EMBEDDER),
            "loaded": loaded is not None,
            "index": meta.get("model_name"),
            "dimension": int(meta["dimension"]) if "dimension" in meta else None,
        },
        "records": {
            "approved": Record.objects.filter(status=RecordStatus.APPROVED).count(),
            "overdue": Record.objects.overdue().count(),
            "disputed": Record.objects.filter(status=RecordStatus.DISPUTED).count(),
            "total": Record.objects.count(),
        },
        "pending_proposals": Proposal.objects.filter(state=ProposalState.PENDING).count(),
        "index_queue": index.pending_count(),
    }


@require_GET
def health(request):
    answer = public_answer()
    from reviews.policy import is_operator

    if is_operator(getattr(request, "user", None)):
        answer.update(_operator_answer())
    response = JsonResponse(answer)
    response["Cache-Control"] = "no-store"  # the operator's answer must not be kept by a shared cache
    response["Vary"] = "Cookie"
    return response
