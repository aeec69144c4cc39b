"""`vetted`: one command line for the person who runs Vetted.

Grouped subcommands (`vetted agent create`, `vetted data backup`, ...) that
hand over to Vetted's management commands, which stay the implementation
(and stay runnable as `manage.py NAME`). Starting it imports neither Django
nor the model for `--help`; a command that does not serve loads Django
without the web side's checks (see run.py), so it starts in well under a second.
"""
