"""Serializers that describe the API's requests and responses in the
OpenAPI schema. Validation itself is done by mcp_bridge.agent_api (shared
with MCP), so every interface reports the same messages."""

from __future__ import annotations

from rest_framework import serializers

from reviews import ids
from reviews import validation as v


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField(
        help_text="Stable code: invalid, unauthorized, not_found, duplicate, rate_limited, limit_reached, ..."
    )
    message = serializers.CharField(help_text="What was wrong and what is allowed.")
    # Declared fields leave the class (DRF's metaclass collects them), so this
    # does not hide Serializer.fields; the stubs cannot know.
    fields = serializers.DictField(
        child=serializers.CharField(),
        required=False,  # type: ignore[assignment]
        help_text="For 'invalid': field name -> problem.",
    )
    existing_id = serializers.CharField(required=False, help_text="For 'duplicate': the existing record or proposal.")
    retry_after = serializers.IntegerField(required=False, help_text="For 'rate_limited': seconds to wait.")


class HitSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    space = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    body = serializers.CharField(help_text="The whole body, or its most relevant chunk when long (body_is_excerpt).")
    body_is_excerpt = serializers.BooleanField()
    approved_at = serializers.DateTimeField(allow_null=True)
    verified_at = serializers.DateTimeField(allow_null=True)
    review_by = serializers.DateField()
    score = serializers.FloatField()
    supersedes = serializers.CharField(required=False, help_text="Set when shown in place of a superseded record.")


class SearchSerializer(serializers.Serializer):
    query = serializers.CharField()
    mode = serializers.CharField()
    results = HitSerializer(many=True)
    withheld = serializers.DictField(
        child=serializers.IntegerField(),
        help_text="Matches not delivered, by reason (retired, superseded, disputed, "
        "edited, expired, not_yet_valid, overdue).",
    )
    withheld_total = serializers.IntegerField()
    withheld_explained = serializers.DictField(child=serializers.CharField(), required=False)
    took_ms = serializers.FloatField()
    as_of = serializers.CharField(required=False, help_text="The moment looked from (as-of), when asked.")
    valid_at = serializers.CharField(required=False, help_text="The day validity windows were judged on, when asked.")


class RecordSerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    space = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    body = serializers.CharField()
    status = serializers.CharField()
    approved_at = serializers.DateTimeField(allow_null=True)
    approved_by = serializers.CharField(allow_null=True)
    verified_at = serializers.DateTimeField(allow_null=True)
    review_by = serializers.DateField()
    valid_from = serializers.DateField(allow_null=True)
    valid_until = serializers.DateField(allow_null=True)
    supersedes = serializers.CharField(allow_null=True)
    checksum = serializers.CharField()
    confidence = serializers.FloatField(allow_null=True)
    source_tool = serializers.CharField(allow_blank=True)


class ReadSerializer(serializers.Serializer):
    id = serializers.CharField()
    deliverable = serializers.BooleanField()
    record = RecordSerializer(required=False)
    withheld = serializers.CharField(required=False)
    explanation = serializers.CharField(required=False)
    current_version = serializers.CharField(required=False)
    as_of = serializers.CharField(required=False, help_text="The moment looked from (as-of), when asked.")
    valid_at = serializers.CharField(required=False, help_text="The day validity windows were judged on, when asked.")


class SummarySerializer(serializers.Serializer):
    id = serializers.CharField()
    title = serializers.CharField()
    kind = serializers.CharField()
    space = serializers.CharField()
    tags = serializers.ListField(child=serializers.CharField())
    excerpt = serializers.CharField()
    approved_at = serializers.DateTimeField(allow_null=True)
    verified_at = serializers.DateTimeField(allow_null=True)
    review_by = serializers.DateField()


class ListSerializer(serializers.Serializer):
    records = SummarySerializer(many=True)
    count = serializers.IntegerField()
    limit = serializers.IntegerField()
    as_of = serializers.CharField(required=False, help_text="The moment looked from (as-of), when asked.")
    valid_at = serializers.CharField(required=False, help_text="The day validity windows were judged on, when asked.")


class NamedCountSerializer(serializers.Serializer):
    name = serializers.CharField()
    records = serializers.IntegerField()
    review_days = serializers.IntegerField(required=False)


class SpaceSummarySerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()
    records = serializers.IntegerField(help_text="Records of this space the agent can receive right now.")


class DescribeSerializer(serializers.Serializer):
    server = serializers.CharField()
    about = serializers.CharField()
    agent = serializers.DictField()
    spaces = SpaceSummarySerializer(many=True, help_text="The spaces this agent was granted, by slug and name.")
    kinds = NamedCountSerializer(many=True)
    tags = NamedCountSerializer(many=True)
    records_current = serializers.IntegerField()
    pending_proposals = serializers.DictField(child=serializers.IntegerField())
    write_rules = serializers.DictField(child=serializers.CharField())
    limits = serializers.DictField(
        help_text="Per-agent limits (0 = none): proposals_per_minute, reads_per_minute, "
        "open_disputes (and open_disputes_yours), mcp_sessions, "
        "mcp_sessions_opened_per_minute, and a note on how refusals look."
    )
    save = serializers.CharField()  # type: ignore[assignment]  # a declared field, as `fields` above


class ProposalSerializer(serializers.Serializer):
    id = serializers.CharField()
    action = serializers.ChoiceField(choices=["create", "revise", "retire", "dispute"])
    state = serializers.ChoiceField(choices=["pending", "accepted", "rejected", "withdrawn"])
    target = serializers.CharField(allow_null=True)
    title = serializers.CharField(allow_blank=True)
    space = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()
    decided_at = serializers.DateTimeField(allow_null=True)
    decision_note = serializers.CharField(allow_blank=True)
    result_record = serializers.CharField(allow_null=True)
    reviewer_changed = serializers.ListField(child=serializers.CharField())
    next = serializers.CharField()


class ProposalCreatedSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["pending"])
    proposal_id = serializers.CharField()
    proposal = ProposalSerializer()
    message = serializers.CharField()


class WithdrawnSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["withdrawn"])
    proposal_id = serializers.CharField()
    proposal = ProposalSerializer()
    message = serializers.CharField()


class SimilarSerializer(serializers.Serializer):
    id = serializers.CharField(
        help_text="A record you can read (rec_...) or one of your own pending proposals (prop_..., pending=true)."
    )
    title = serializers.CharField()
    kind = serializers.CharField()
    space = serializers.CharField()
    similarity = serializers.FloatField()
    pending = serializers.BooleanField(required=False, help_text="Set for a proposal waiting for review.")


class SimilarExistsSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["similar_exists"])
    similar = SimilarSerializer(many=True)
    threshold = serializers.FloatField()
    message = serializers.CharField()


class AlreadyRejectedSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["already_rejected"])
    proposal_id = serializers.CharField(help_text="Your earlier proposal with this same content, rejected.")
    proposal = ProposalSerializer()
    decided_at = serializers.DateTimeField()
    decision_note = serializers.CharField(allow_blank=True)
    message = serializers.CharField()


RECORD_ID_PATTERN = ids.RECORD_ID_PATTERN
PROPOSAL_ID_PATTERN = ids.PROPOSAL_ID_PATTERN
TAG_PATTERN = r"^[a-z0-9][a-z0-9._/:+-]*$"


def kind_names() -> list[str]:
    return list(v.kinds())


class ProposeSerializer(serializers.Serializer):
    title = serializers.CharField(
        required=False,
        min_length=v.TITLE_MIN,
        max_length=v.TITLE_MAX,
        help_text=f"Required unless revises is given. {v.TITLE_MIN}-{v.TITLE_MAX} characters, one line.",
    )
    body = serializers.CharField(
        required=False,
        min_length=v.BODY_MIN,
        max_length=v.BODY_MAX,
        help_text=f"Required unless revises is given. {v.BODY_MIN}-{v.BODY_MAX} characters of Markdown "
        "(real text: keyboard mashing and repeated words are refused).",
    )
    kind = serializers.ChoiceField(
        required=False, choices=kind_names(), help_text="Required unless revises is given (see describe)."
    )
    space = serializers.CharField(
        required=False,
        help_text="Required unless revises is given; one of the agent's spaces (its slug, see describe).",
    )
    reason = serializers.CharField(
        min_length=v.REASON_MIN,
        max_length=v.REASON_MAX,
        help_text=f"Why this is worth keeping; the reviewer reads it ({v.REASON_MIN}+ characters).",
    )
    tags = serializers.ListField(
        child=serializers.RegexField(TAG_PATTERN, max_length=v.TAG_MAX_LEN),
        required=False,
        max_length=v.TAGS_MAX,
        help_text="Lowercase; a-z 0-9 . _ / : + -",
    )
    review_by = serializers.DateField(required=False, help_text="Future date; default today + the kind's period.")
    revises = serializers.RegexField(
        RECORD_ID_PATTERN, required=False, help_text="A record id: propose a revision of it instead."
    )
    confirm_duplicate = serializers.BooleanField(
        required=False, default=False, help_text="Store even though a similar record exists."
    )
    resubmit = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Send again content a reviewer rejected (after an already_rejected answer); needs resubmit_reason.",
    )
    resubmit_reason = serializers.CharField(
        required=False,
        min_length=v.REASON_MIN,
        max_length=v.REASON_MAX,
        help_text="With resubmit: what changed since the rejection; the reviewer reads it beside their note.",
    )


class ReasonSerializer(serializers.Serializer):
    reason = serializers.CharField(
        min_length=v.REASON_MIN,
        max_length=v.REASON_MAX,
        help_text=f"Why; the reviewer reads it ({v.REASON_MIN}+ characters).",
    )


class NoteSerializer(serializers.Serializer):
    note = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=v.NOTE_MAX,
        help_text=f"Why, optional (up to {v.NOTE_MAX} characters); kept with the proposal.",
    )


class FindingSerializer(serializers.Serializer):
    kind = serializers.CharField(
        help_text="possible_contradiction, broken_supersession, supersession_loop, "
        "stale_retirement, stale_proposal, overdue, edited_since_approval, index_drift"
    )
    why = serializers.CharField()
    suggestion = serializers.CharField()
    records = serializers.ListField(child=serializers.CharField())
    proposals = serializers.ListField(child=serializers.CharField())
    space = serializers.CharField(allow_blank=True)
    similarity = serializers.FloatField(required=False)


class QualitySerializer(serializers.Serializer):
    spaces = serializers.ListField(child=serializers.CharField())
    checked_records = serializers.IntegerField()
    counts = serializers.DictField(child=serializers.IntegerField(), help_text="Findings by kind, listed or not.")
    omitted = serializers.DictField(
        child=serializers.IntegerField(), help_text="Findings of a kind counted but not listed (beyond the limit)."
    )
    findings = FindingSerializer(many=True)
    note = serializers.CharField()
