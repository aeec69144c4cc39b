from django.urls import path

from . import agent_views, inbox_views, notify_views, record_views, status_views, views, worklist_views

urlpatterns = [
    # The inbox is the home page (the overview's counts sit at its top).
    path("", inbox_views.inbox, name="home"),
    path("setup/", views.first_run, name="first_run"),
    path("proposals/bulk", inbox_views.bulk, name="proposal_bulk"),
    path("proposals/<str:public_id>/", inbox_views.card, name="proposal_card"),
    path("proposals/<str:public_id>/accept", inbox_views.accept, name="proposal_accept"),
    path("proposals/<str:public_id>/reject", inbox_views.reject, name="proposal_reject"),
    path("proposals/<str:public_id>/revise", inbox_views.revise, name="proposal_revise"),
    path("proposals/<str:public_id>/similar", inbox_views.similar, name="proposal_similar"),
    path("due/", worklist_views.due, name="due"),
    path("disputed/", worklist_views.disputed, name="disputed"),
    path("edited/", worklist_views.edited, name="edited"),
    path("records/", record_views.records, name="records"),
    path("records/<str:public_id>/", record_views.detail, name="record_detail"),
    path("records/<str:public_id>/verify", record_views.verify, name="record_verify"),
    path("records/<str:public_id>/retire", record_views.retire, name="record_retire"),
    path("records/<str:public_id>/revise", record_views.revise, name="record_revise"),
    path("records/<str:public_id>/clear-dispute", record_views.clear, name="record_clear_dispute"),
    path("records/<str:public_id>/restore", record_views.restore, name="record_restore"),
    path("records/<str:public_id>/approve-current", record_views.approve_current, name="record_approve_current"),
    path("agents/", agent_views.agents, name="agents"),
    path("agents/create", agent_views.create, name="agent_create"),
    path("agents/<str:name>/revoke", agent_views.revoke, name="agent_revoke"),
    path("quality/", status_views.quality_page, name="quality"),
    path("settings/", status_views.site_settings, name="site_settings"),
    path("settings/lockouts/clear", status_views.clear_lockout, name="lockout_clear"),
    # notify: the live inbox's poll, the settings page's notification controls
    path("inbox/live", notify_views.live_inbox, name="live_inbox"),
    path("settings/notify/test", notify_views.test_notification, name="notify_test"),
    path("settings/notify/feed", notify_views.rotate_feed, name="notify_rotate_feed"),
]
