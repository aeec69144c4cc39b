"""Memory in and out of an instance: the JSON snapshot export, Markdown notes
(export and import), and backup/restore of the database file. Everything
here reads through the ORM or changes state through reviews.actions."""
