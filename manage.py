#!/usr/bin/env python
"""Django's command-line utility for Vetted."""

import os
import sys


def main():
    if sys.argv[1:2] == ["mcp_stdio"] and not {"-h", "--help"} & set(sys.argv[2:]):
        # The stdio bridge must answer within 1 s of being spawned: skip
        # Django's setup (~1 s) and run the standard-library-only relay.
        from mcp_bridge.stdio.bridge import main as bridge_main

        sys.exit(bridge_main(sys.argv[2:]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memory_site.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
