import functools
import json
from urllib.parse import quote

from django import template
from django.urls import get_script_prefix, reverse

from inbox import decision_views, lookalikes, markdown
from inbox.worddiff import word_diff
from reviews import vocabulary

register = template.Library()


@register.filter
def render_markdown(text):
    return markdown.render(text)


@register.simple_tag
def diff(old, new):
    return word_diff(old, new)


@register.simple_tag
def lookalike_warnings(proposal):
    """The look-alike title warnings of a proposal: precomputed for a page of
    cards (lookalikes.annotate, one query), else looked up for this one."""
    found = getattr(proposal, "lookalike_warnings", None)
    if found is None:
        found = lookalikes.warnings_for([proposal]).get(proposal.pk, [])
    return found


# --------------------------------------------------------------------------- decisions


@register.simple_tag
def decision_words():
    """The decision vocabulary (reviews.vocabulary) for a template:
    ``{% decision_words as w %}`` then ``{{ w.opener.retire }}``, ``{{ w.key.keep }}``."""
    return {
        "label": vocabulary.LABELS,
        "opener": vocabulary.OPENERS,
        "confirm": vocabulary.CONFIRMS,
        "meaning": vocabulary.MEANINGS,
        "key": vocabulary.KEYS,
        "key_help": vocabulary.KEY_HELP,
    }


@register.simple_tag
def key_table():
    """Every key by section (reviews.vocabulary.key_table), for the help dialog."""
    return vocabulary.key_table()


@register.simple_tag
def page_keys() -> str:
    """The keys keys.js acts on beyond the deciding ones, as JSON for base.html's
    data-keys (escaped by the template): the letters live in reviews.vocabulary."""
    go = {letter: reverse(url) for letter, (url, _name) in vocabulary.GO.items()}
    return json.dumps({**vocabulary.MORE_KEYS, "pages": go})


@register.simple_tag(takes_context=True)
def undo_toasts(context):
    """The Undo toasts carried by this request's flash messages (see decision_views.announce)."""
    request = context.get("request")
    found = []
    for message in context.get("messages") or []:
        made = decision_views.toast_from_message(message, request.get_full_path() if request else "/")
        if made is not None:
            found.append(made)
    return found


@register.simple_tag
def proposal_done(proposal):
    """What deciding a proposal did, in the shared vocabulary ("Kept record", "Retired record", …)."""
    return decision_views.proposal_done(proposal)


@register.inclusion_tag("reviews/_confirm_step.html", takes_context=True)
def confirm_step(context, decision: str, url: str, card: str, pk: int, note_label: str, required: bool = False):
    """A keep or retire control: an opener (its key only opens it) and a
    confirm form with a note, in the vocabulary's words, the same on every
    page that decides a dispute or a retirement (no single key decides)."""
    return {
        "decision": decision,
        "url": url,
        "target": f"{card}-{pk}",  # the card the answer replaces: proposal-PK or record-PK
        "note_label": note_label,
        "required": required,
        "danger": decision == vocabulary.RETIRE,
        "opener": vocabulary.OPENERS[decision],
        "confirm": vocabulary.CONFIRMS[decision],
        "meaning": vocabulary.MEANINGS[decision],
        "key": vocabulary.KEYS[decision],
        "csrf_token": context.get("csrf_token"),
        "next": context["request"].get_full_path() if context.get("request") else "",
    }


# Spaces: the two-person rule's state on a card, so the second
# reviewer sees the first's decision.
@register.simple_tag(takes_context=True)
def approvals_note(context, proposal) -> str:
    from reviews import space_access
    from reviews.actions.approvals import approvals_of

    # The rules of every space, read once per request: an inbox page shows
    # many cards (one query per card cost the 500-pending inbox ~10 ms).
    request = context.get("request")
    rules = getattr(request, "_vetted_approval_rules", None)
    if rules is None:
        rules = space_access.approval_rules()
        if request is not None:
            request._vetted_approval_rules = rules
    required = rules.get(space_access.space_of(proposal), 1)
    if required < 2:
        return ""
    so_far = approvals_of(proposal)
    who = ", ".join(a.user.get_username() for a in so_far)
    return f"{len(so_far)} of {required} approvals" + (f": accepted by {who}" if who else "")


@register.simple_tag(takes_context=True)
def two_person(context, proposal):
    """The two-person rule's state of a pending card for the viewer (who has
    approved, who may give the next approval, whether the viewer's Accept
    would count), or None where one approval makes it true; read through the
    same policy the accept asks (reviews/actions/approvals.two_person_state)."""
    from reviews import space_access
    from reviews.actions.approvals import two_person_state

    request = context.get("request")
    rules = getattr(request, "_vetted_approval_rules", None)
    if rules is None:
        rules = space_access.approval_rules()
        if request is not None:
            request._vetted_approval_rules = rules
    if rules.get(space_access.space_of(proposal), 1) < 2 or request is None:
        return None
    return two_person_state(proposal, request.user)


# --------------------------------------------------------------------------- card links

_CARD_URLS = ("proposal_card", "proposal_accept", "proposal_reject", "proposal_revise", "proposal_similar")
_ID = "__public_id__"


@functools.lru_cache(maxsize=8)
def _card_url_patterns(prefix: str) -> dict[str, tuple[str, str]]:
    """Each card URL split around its id, reversed once per script prefix:
    a page of 25 cards otherwise reverses about 200 URLs (a tenth of its time)."""
    patterns = {}
    for name in (*_CARD_URLS, "record_detail"):
        before, _, after = reverse(name, args=[_ID]).partition(_ID)
        patterns[name] = (before, after)
    patterns["home"] = (reverse("home"), "")
    return patterns


@register.simple_tag
def card_links(proposal):
    """The URLs one card links to, as ``reverse`` gives them:
    ``{% card_links p as u %}`` then ``{{ u.proposal_accept }}``, ``{{ u.target }}`` (the
    target record's page), ``{{ u.home }}``."""
    patterns = _card_url_patterns(get_script_prefix())
    public_id = quote(proposal.public_id, safe="")
    links = {name: f"{patterns[name][0]}{public_id}{patterns[name][1]}" for name in _CARD_URLS}
    links["home"] = patterns["home"][0]
    if proposal.target_id:
        before, after = patterns["record_detail"]
        links["target"] = f"{before}{quote(proposal.target.public_id, safe='')}{after}"
    return links
