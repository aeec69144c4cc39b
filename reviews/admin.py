"""The admin audits everything and changes nothing by itself.

Records, proposals, agents and user accounts are read-only here; the admin
actions on them call reviews.actions, so they are validated and audited like
any other interface. The write log cannot be added to, changed or deleted at
all. Django's own user and group admins (forms that change accounts and
their staff flag with no audit event) are replaced: accounts are made with
the first-run page or ``createsuperuser``, changed only by the actions below.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse
from django.utils.html import format_html

from . import actions, admin_spaces, vocabulary
from .errors import VettedError
from .models import Agent, AuditEvent, Proposal, Record


def _run(modeladmin, request, queryset, fn, verb):
    done = 0
    for obj in queryset:
        try:
            fn(obj)
        except VettedError as exc:
            modeladmin.message_user(request, f"{obj}: {exc.message}", level=messages.ERROR)
        else:
            done += 1
    if done:
        modeladmin.message_user(request, f"{verb} {done} item(s).", level=messages.SUCCESS)


def _audit_link(ref_field: str, ref: str) -> str:
    url = reverse("admin:reviews_auditevent_changelist") + f"?{ref_field}={ref}"
    return format_html('<a href="{}">audit events</a>', url)


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shows everything, edits nothing: state changes go through actions."""

    def has_add_permission(self, request):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        # The change page stays viewable (view permission); saving is refused.
        return False

    def get_actions(self, request):
        found = super().get_actions(request)
        found.pop("delete_selected", None)
        return found


@admin.register(Record)
class RecordAdmin(ReadOnlyAdmin):
    def get_queryset(self, request):
        # Spaces: a non-superuser sees only rows of their spaces.
        return admin_spaces.records(request, super().get_queryset(request))

    list_display = (
        "public_id",
        "title",
        "kind",
        "space",
        "status",
        "review_by",
        "checksum_state",
        "proposed_by",
        "approved_at",
    )
    # RelatedOnly: the agents among the rows shown, not every agent.
    list_filter = ("status", "kind", "space", "review_by", ("proposed_by", admin.RelatedOnlyFieldListFilter))
    search_fields = ("public_id", "title", "body", "approved_checksum")
    date_hierarchy = "approved_at"
    readonly_fields = ("checksum_state", "history")
    actions = ("verify_selected", "clear_dispute_selected", "retire_selected")

    @admin.display(description="checksum")
    def checksum_state(self, obj):
        return "edited since approval" if obj.edited_since_approval else "matches approval"

    @admin.display(description="history")
    def history(self, obj):
        parts = [_audit_link("record_ref", obj.public_id)]
        for label, other in (("supersedes", obj.supersedes), ("superseded by", obj.superseded_by)):
            if other is not None:
                url = reverse("admin:reviews_record_change", args=[other.pk])
                parts.append(format_html('{} <a href="{}">{}</a>', label, url, other.public_id))
        return format_html(" · ".join(["{}"] * len(parts)), *parts)

    @admin.action(description="Verify (stamp verified, new review date from the kind)")
    def verify_selected(self, request, queryset):
        _run(self, request, queryset, lambda r: actions.verify_record(r, actor=request.user), "Verified")

    # The shared dispute vocabulary (reviews/vocabulary.py): named by what happens to the record.
    @admin.action(description=f"{vocabulary.LABELS[vocabulary.KEEP]} ({vocabulary.MEANINGS[vocabulary.KEEP]})")
    def clear_dispute_selected(self, request, queryset):
        _run(
            self,
            request,
            queryset,
            lambda r: actions.clear_dispute(r, actor=request.user, note="Kept in the admin"),
            vocabulary.PAST[vocabulary.KEEP],
        )

    @admin.action(description=f"{vocabulary.LABELS[vocabulary.RETIRE]} ({vocabulary.MEANINGS[vocabulary.RETIRE]})")
    def retire_selected(self, request, queryset):
        note = f"Retired in the admin by {request.user.get_username()}"
        _run(
            self,
            request,
            queryset,
            lambda r: actions.retire_record(r, actor=request.user, note=note),
            vocabulary.PAST[vocabulary.RETIRE],
        )


@admin.register(Proposal)
class ProposalAdmin(ReadOnlyAdmin):
    def get_queryset(self, request):
        # Spaces: a non-superuser sees only rows of their spaces.
        return admin_spaces.proposals(request, super().get_queryset(request))

    list_display = (
        "public_id",
        "action",
        "state",
        "title_or_target",
        "agent",
        "created_at",
        "decided_by",
        "decided_at",
    )
    list_filter = ("state", "action", ("agent", admin.RelatedOnlyFieldListFilter), "space")
    search_fields = ("public_id", "title", "body", "reason", "target__public_id")
    date_hierarchy = "created_at"
    readonly_fields = ("history",)
    actions = ("accept_selected", "reject_selected")

    @admin.display(description="title")
    def title_or_target(self, obj):
        return obj.title or (f"{obj.target.public_id}: {obj.target.title}" if obj.target_id else "")

    @admin.display(description="history")
    def history(self, obj):
        return _audit_link("proposal_ref", obj.public_id)

    @admin.action(description=f"Accept as proposed (a dispute or retirement: {vocabulary.LABELS[vocabulary.RETIRE]})")
    def accept_selected(self, request, queryset):
        _run(self, request, queryset, lambda p: actions.accept_proposal(p, actor=request.user), "Accepted")

    @admin.action(description=f"Reject (a dispute or retirement: {vocabulary.LABELS[vocabulary.KEEP]})")
    def reject_selected(self, request, queryset):
        _run(
            self,
            request,
            queryset,
            lambda p: actions.reject_proposal(p, actor=request.user, note="Rejected in the admin"),
            "Rejected",
        )


@admin.register(Agent)
class AgentAdmin(ReadOnlyAdmin):
    def get_queryset(self, request):
        # Spaces: a non-superuser sees only rows of their spaces.
        return admin_spaces.agents(request, super().get_queryset(request))

    list_display = (
        "name",
        "public_id",
        "spaces",
        "source_tool",
        "is_active",
        "last_seen_at",
        "created_at",
        "revoked_at",
    )
    list_filter = ("is_active",)
    search_fields = ("name", "public_id", "token_prefix")
    exclude = ("token_digest",)
    actions = ("revoke_selected",)

    @admin.action(description="Revoke (the token stops working)")
    def revoke_selected(self, request, queryset):
        _run(self, request, queryset, lambda a: actions.revoke_agent(a, actor=request.user), "Revoked")


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    def get_queryset(self, request):
        # Spaces: a non-superuser sees only rows of their spaces.
        return admin_spaces.events(request, super().get_queryset(request))

    list_display = (
        "at",
        "event_type",
        "actor_type",
        "actor",
        "subject_type",
        "subject_id",
        "record_ref",
        "proposal_ref",
        "snippet",
    )
    list_filter = ("event_type", "actor_type", "subject_type", "actor", "at")
    search_fields = (
        "subject_id",
        "record_ref",
        "proposal_ref",
        "actor",
        "snippet",
        "checksum_before",
        "checksum_after",
    )
    date_hierarchy = "at"
    list_per_page = 100

    def get_actions(self, request):
        return {}


# Groups are not used (a reviewer is a staff account); the stock user admin
# edits accounts by form without an audit event.
for _model in (get_user_model(), Group):
    if admin.site.is_registered(_model):
        admin.site.unregister(_model)


@admin.register(get_user_model())
class UserAdmin(ReadOnlyAdmin):
    def get_queryset(self, request):
        # Spaces: a non-superuser sees only rows of their spaces.
        return admin_spaces.users(request, super().get_queryset(request))

    list_display = ("username", "email", "is_active", "is_staff", "is_superuser", "last_login", "date_joined")
    list_filter = ("is_active", "is_staff", "is_superuser")
    search_fields = ("username", "email", "first_name", "last_name")
    ordering = ("username",)
    # Never the password hash; permissions and groups are unused.
    fields = (
        "username",
        "first_name",
        "last_name",
        "email",
        "is_active",
        "is_staff",
        "is_superuser",
        "last_login",
        "date_joined",
        "history",
    )
    readonly_fields = ("history",)
    actions = ("make_staff", "remove_staff", "deactivate", "activate")

    @admin.display(description="history")
    def history(self, obj):
        return _audit_link("subject_id", obj.get_username())

    @admin.action(description="Make reviewer (staff: may sign in to the site and decide)")
    def make_staff(self, request, queryset):
        _run(
            self,
            request,
            queryset,
            lambda u: actions.set_account_staff(u, actor=request.user, is_staff=True),
            "Made reviewer",
        )

    @admin.action(description="Remove reviewer (staff) status")
    def remove_staff(self, request, queryset):
        _run(
            self,
            request,
            queryset,
            lambda u: actions.set_account_staff(u, actor=request.user, is_staff=False),
            "Removed reviewer status of",
        )

    @admin.action(description="Deactivate (cannot sign in or decide)")
    def deactivate(self, request, queryset):
        _run(self, request, queryset, lambda u: actions.deactivate_account(u, actor=request.user), "Deactivated")

    @admin.action(description="Activate")
    def activate(self, request, queryset):
        _run(self, request, queryset, lambda u: actions.activate_account(u, actor=request.user), "Activated")
