from common import __version__  # noqa: F401  (the version lives in the bottom layer; kept here for callers)
