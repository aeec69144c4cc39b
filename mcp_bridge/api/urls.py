from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from . import views

urlpatterns = [
    path("describe", views.describe, name="api-describe"),
    path("search", views.search, name="api-search"),
    path("records", views.records, name="api-records"),
    path("records/<str:record_id>", views.record, name="api-record"),
    path("records/<str:record_id>/dispute", views.dispute, name="api-dispute"),
    path("records/<str:record_id>/retirement", views.retirement, name="api-retirement"),
    path("proposals", views.proposals, name="api-proposals"),
    path("proposals/<str:proposal_id>", views.proposal, name="api-proposal"),
    path("proposals/<str:proposal_id>/withdrawal", views.withdrawal, name="api-withdrawal"),
    path("quality", views.quality, name="api-quality"),
    path("schema", SpectacularAPIView.as_view(), name="api-schema"),
    # The split view: its script is a file (?script), so the page needs no inline script (memory_site/csp.py).
    path("docs", SpectacularSwaggerSplitView.as_view(url_name="api-schema"), name="api-docs"),
    re_path(r"^(?P<rest>.*)$", views.unknown, name="api-unknown"),  # JSON 404, last
]
