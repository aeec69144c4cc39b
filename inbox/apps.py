from django.apps import AppConfig


class InboxConfig(AppConfig):
    """The reviewer site. Its models are the domain's (the ``reviews`` app);
    it is an app of its own so that its commands live with it."""

    name = "inbox"
    label = "inbox"
    verbose_name = "Reviewer site"
