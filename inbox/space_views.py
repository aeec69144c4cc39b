"""Spaces in the web: the spaces a person holds a role in, one space's
members, agents' grants and approval rule, and the forms that change them.

Each form is a thin view over one action in reviews/actions/spaces.py, which
asks the permission policy and the livability check; a refusal is shown as
the action's own message. Nothing here decides who may do what: the page
only chooses what to show, and a space the viewer is not a member of is the
same 404 as an unknown one.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from reviews import actions, policy, space_access
from reviews.actions.approvals import two_person_state
from reviews.errors import NotFound, ValidationFailed, VettedError
from reviews.models import Agent, Proposal, ProposalState
from reviews.space_models import MAX_APPROVALS, ROLES, Membership, Role, Space, SpaceKind

from .page_helpers import nav_counts, site_login_required


def _space_or_404(user, slug: str) -> tuple[Space, str]:
    """The space and the viewer's role in it; a space they are not a member of does not exist for them."""
    # Who sees a space is the permission policy's answer, as for every action.
    space = Space.objects.filter(slug=slug).first() if policy.sees(user, slug) else None
    if space is None:
        raise Http404("No such space.")
    return space, str(policy.standing(user, slug))


def _page(slug: str) -> str:
    return reverse("space_detail", args=[slug])


def _refused(request, exc: VettedError) -> None:
    messages.error(request, exc.message)


def _my_spaces(user) -> list[dict]:
    """The spaces ``user`` holds a role in, in display order, with their role and approval rule."""
    rows = {m.space.slug: m for m in Membership.objects.filter(user=user).select_related("space")}
    return [
        {
            "slug": slug,
            "name": rows[slug].space.name,
            "kind": rows[slug].space.kind,
            "required_approvals": space_access.required_approvals(slug),
            "role": rows[slug].role,
        }
        for slug in space_access.readable_spaces(user)
        if slug in rows
    ]


def _list(request, values: dict, errors: dict, status: int = 200):
    context = {**nav_counts(), "nav": "spaces", "spaces": _my_spaces(request.user), "values": values, "errors": errors}
    return render(request, "reviews/spaces/list.html", context, status=status)


@site_login_required
@require_GET
def spaces(request):
    return _list(request, {"slug": "", "name": ""}, {})


@site_login_required
@require_POST
def create(request):
    values = {"slug": request.POST.get("slug", ""), "name": request.POST.get("name", "")}
    try:
        space = actions.create_space(values["slug"], kind=SpaceKind.TEAM, name=values["name"], actor=request.user)
    except ValidationFailed as exc:
        return _list(request, values, exc.fields, status=400)
    except VettedError as exc:
        return _list(request, values, {"form": exc.message}, status=400)
    messages.success(request, f"Created {space.slug}; you are its owner. Add reviewers below.")
    return redirect(_page(space.slug))


@site_login_required
@require_GET
def detail(request, slug):
    return detail_response(request, slug)


def detail_response(request, slug: str, **extra):
    """A space's page (404 for a space the viewer is not a member of), with ``extra`` in its context."""
    space, role = _space_or_404(request.user, slug)
    owner = role == Role.OWNER
    members = []
    granted = []
    if owner:
        # Who belongs and which agents read the space: an owner answers for both.
        members = list(Membership.objects.filter(space=space).select_related("user").order_by("user__username"))
        granted = [
            a
            for a in Agent.objects.filter(is_active=True, spaces__icontains=f'"{space.slug}"')
            .select_related("owner")
            .order_by("name")
            if space.slug in a.spaces
        ]
    my_agents = [
        {"agent": a, "granted": space.slug in a.spaces}
        for a in Agent.objects.filter(owner=request.user, is_active=True).order_by("name")
    ]
    required = space_access.required_approvals(space.slug)
    approvers = [getattr(p, "username", "") for p in policy.approvers(space.slug)]
    return render(
        request,
        "reviews/spaces/detail.html",
        {
            **nav_counts(),
            "nav": "spaces",
            "space": space,
            "role": role,
            "is_owner": owner,
            "members": members,
            "granted": granted,
            "my_agents": my_agents,
            "required": required,
            # Who may approve: to owners, and to reviewers where two must (their cards name them anyway).
            "approvers": approvers if owner or (role == Role.REVIEWER and required >= 2) else [],
            "roles": ROLES,
            "approval_choices": range(1, MAX_APPROVALS + 1),
            "personal": space.kind == SpaceKind.PERSONAL,
            **extra,
        },
    )


@site_login_required
@require_POST
def member_add(request, slug):
    """Add a member or change a member's role (the same action: a role for a person in a space)."""
    username = request.POST.get("username", "").strip()
    role = request.POST.get("role", "")
    try:
        membership = actions.add_member(slug, username, role=role, actor=request.user)
    except NotFound as exc:
        if not policy.sees(request.user, slug):
            raise Http404("No such space.") from exc
        _refused(request, exc)
    except VettedError as exc:
        _refused(request, exc)
    else:
        messages.success(request, f"{membership.user.get_username()} is now a {membership.role} of {slug}.")
    return redirect(_page(slug))


@site_login_required
@require_POST
def member_remove(request, slug, username):
    try:
        narrowed = actions.remove_member(slug, username, actor=request.user)
    except NotFound as exc:
        if not policy.sees(request.user, slug):
            raise Http404("No such space.") from exc
        _refused(request, exc)
    except VettedError as exc:
        _refused(request, exc)
    else:
        lost = f" Their agents lost this space: {', '.join(narrowed)}." if narrowed else ""
        messages.success(request, f"Removed {username} from {slug}.{lost}")
    return redirect(_page(slug))


@site_login_required
@require_POST
def approvals(request, slug):
    raw = request.POST.get("required_approvals", "").strip()
    try:
        # Not a number: the action's own refusal names what is allowed.
        space = actions.set_required_approvals(slug, int(raw) if raw.isdigit() else raw, actor=request.user)
    except NotFound as exc:
        raise Http404("No such space.") from exc
    except VettedError as exc:
        _refused(request, exc)
    else:
        n = space.required_approvals
        messages.success(request, f"{slug} now needs {n} approval{'s' if n != 1 else ''}.")
    return redirect(_page(slug))


@site_login_required
@require_POST
def grant(request, slug):
    """Grant this space to one of the viewer's own agents, or take it back."""
    _space_or_404(request.user, slug)
    name = request.POST.get("agent", "")
    revoke = request.POST.get("op") == "revoke"
    # Only the viewer's own agents: another person's agent is the same
    # refusal as an unknown one (the action refuses either way).
    if not Agent.objects.filter(owner=request.user, name=name, is_active=True).exists():
        messages.error(request, f"You have no active agent named {name!r}.")
        return redirect(_page(slug))
    try:
        if revoke:
            actions.revoke_space(name, slug, actor=request.user)
        else:
            actions.grant_space(name, slug, actor=request.user)
    except VettedError as exc:
        _refused(request, exc)
    else:
        done = "no longer reads" if revoke else "may now read and propose in"
        messages.success(request, f"Agent {name} {done} {slug}.")
    return redirect(_page(slug))


def waiting_for(user) -> list:
    """Pending proposals with a first approval that ``user``'s accept would
    complete, oldest first: the two-person rule's state read for each
    (approvals.two_person_state, the questions the accept asks), so the list
    never offers one the accept would refuse."""
    rules = space_access.approval_rules()
    slugs = [s for s in space_access.deciding_spaces(user) if rules.get(s, 1) >= 2]
    if not slugs:
        return []
    rows = (
        Proposal.objects.filter(space_access.proposals_in(slugs), state=ProposalState.PENDING, approvals__isnull=False)
        .select_related("agent", "target")
        .distinct()
        .order_by("created_at", "pk")
    )
    shown = []
    for proposal in rows:
        state = two_person_state(proposal, user)
        if state is not None and state.may_accept and state.approved_by:
            proposal.two_person = state  # type: ignore[attr-defined]  # for the template
            shown.append(proposal)
    return shown


@site_login_required
@require_GET
def waiting(request):
    return render(
        request,
        "reviews/spaces/waiting.html",
        {**nav_counts(), "nav": "spaces", "proposals": waiting_for(request.user)},
    )
