"""The reviewer site: the htmx inbox, records, agents, quality and settings pages.

Views are thin: check access, call one action, render or redirect."""
