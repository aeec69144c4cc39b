"""`python -m memory_site.command_line` is `vetted` before the package is installed."""

from .app import main

main()
