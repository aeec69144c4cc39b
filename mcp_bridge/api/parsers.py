"""The REST API's JSON parser: DRF's, except that JSON nested too deeply for
Python's decoder (a RecursionError, not a ValueError, so DRF lets it through
as a 500) is refused like any other unparsable body."""

from __future__ import annotations

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise ParseError("JSON parse error - nested too deeply; send a flat JSON object.") from None
