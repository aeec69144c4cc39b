from django.urls import path

from . import (
    activity_views,
    agent_views,
    asof_views,
    decision_views,
    hint_views,
    import_views,
    inbox_views,
    invitation_views,
    move_views,
    notify_views,
    oauth_views,
    record_browse_views,
    record_views,
    space_views,
    status_views,
    triage_views,
    views,
    worklist_views,
)

urlpatterns = [
    # The inbox is the home page (the overview's counts sit at its top).
    path("", inbox_views.inbox, name="home"),
    path("setup/", views.first_run, name="first_run"),
    path("proposals/bulk", inbox_views.bulk, name="proposal_bulk"),
    path("inbox/view", triage_views.choose_view, name="inbox_view"),
    path("proposals/bulk-all", triage_views.bulk_all, name="proposal_bulk_all"),
    path("proposals/<str:public_id>/", inbox_views.card, name="proposal_card"),
    path("proposals/<str:public_id>/accept", inbox_views.accept, name="proposal_accept"),
    path("proposals/<str:public_id>/reject", inbox_views.reject, name="proposal_reject"),
    path("proposals/<str:public_id>/revise", inbox_views.revise, name="proposal_revise"),
    # Hints: similar records and proposals, possible contradictions, merge / reject as duplicate.
    path("proposals/<str:public_id>/similar", hint_views.similar, name="proposal_similar"),
    path("proposals/<str:public_id>/merge", hint_views.merge, name="proposal_merge"),
    path("proposals/<str:public_id>/reject-duplicate", hint_views.reject_duplicate, name="proposal_reject_duplicate"),
    path("import/", import_views.upload, name="import_instructions"),
    path("due/", worklist_views.due, name="due"),
    path("disputed/", worklist_views.disputed, name="disputed"),
    path("edited/", worklist_views.edited, name="edited"),
    path("records/", record_browse_views.records, name="records"),
    # as-of: the records as an agent saw them on a past date.
    path("records/as-seen/", asof_views.as_seen, name="records_as_of"),
    path("records/<str:public_id>/", record_browse_views.detail, name="record_detail"),
    path("records/<str:public_id>/verify", record_views.verify, name="record_verify"),
    path("records/<str:public_id>/retire", record_views.retire, name="record_retire"),
    path("records/<str:public_id>/move", move_views.move, name="record_move"),  # spaces
    path("records/<str:public_id>/revise", record_views.revise, name="record_revise"),
    path("records/<str:public_id>/keep", record_views.clear, name="record_keep"),
    # The old name of Keep record, kept for forms and links made before it.
    path("records/<str:public_id>/clear-dispute", record_views.clear, name="record_clear_dispute"),
    path("records/<str:public_id>/restore", record_views.restore, name="record_restore"),
    path("records/<str:public_id>/approve-current", record_views.approve_current, name="record_approve_current"),
    # Undo and Recent decisions
    path("decisions/", decision_views.recent, name="recent_decisions"),
    path("decisions/undo", decision_views.undo, name="decision_undo"),
    path("agents/", agent_views.agents, name="agents"),
    path("agents/create", agent_views.create, name="agent_create"),
    path("agents/<str:name>/revoke", agent_views.revoke, name="agent_revoke"),
    path("agents/grants/<str:public_id>/revoke", agent_views.revoke_grant, name="oauth_grant_revoke"),
    # Spaces, members, agents' grants and the approval rule, each form one action.
    path("spaces/", space_views.spaces, name="spaces"),
    path("spaces/create", space_views.create, name="space_create"),
    # Two-approval proposals whose second approval the viewer may give (not under spaces/: any word is a slug).
    path("waiting/", space_views.waiting, name="waiting_for_me"),
    path("spaces/<str:slug>/", space_views.detail, name="space_detail"),
    path("spaces/<str:slug>/members", space_views.member_add, name="space_member_add"),
    path("spaces/<str:slug>/members/<str:username>/remove", space_views.member_remove, name="space_member_remove"),
    path("spaces/<str:slug>/approvals", space_views.approvals, name="space_approvals"),
    path("spaces/<str:slug>/grants", space_views.grant, name="space_grant"),
    path("spaces/<str:slug>/invitations", invitation_views.invitations, name="space_invite"),
    path("spaces/<str:slug>/invitations/<int:pk>/revoke", invitation_views.revoke, name="space_invitation_revoke"),
    # The one page that answers signed out besides the sign-in: a valid invitation token or nothing.
    path("invite/", invitation_views.invitation, name="invitation"),
    path("oauth/consent", oauth_views.consent, name="oauth_consent"),
    path("quality/", status_views.quality_page, name="quality"),
    path("activity/", activity_views.activity_page, name="activity"),
    path("settings/", status_views.site_settings, name="site_settings"),
    path("settings/lockouts/clear", status_views.clear_lockout, name="lockout_clear"),
    # notify: the live inbox's poll, the settings page's notification controls
    path("inbox/live", notify_views.live_inbox, name="live_inbox"),
    path("settings/notify/test", notify_views.test_notification, name="notify_test"),
    path("settings/notify/feed", notify_views.rotate_feed, name="notify_rotate_feed"),
]
