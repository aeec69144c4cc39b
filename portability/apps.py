from django.apps import AppConfig


class PortabilityConfig(AppConfig):
    """Getting memory in and out: JSON and Markdown export and import, backup and
    restore, instruction files, the vault and published folders. Its models are
    the domain's (the ``reviews`` app); it is an app of its own so that its
    commands (backup, restore, export_*, import_markdown, import_instructions,
    publish, vault) live with it."""

    name = "portability"
    label = "portability"
    verbose_name = "Import, export and backup"
