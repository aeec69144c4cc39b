"""The bottom layer: helpers every app may import (environment variables,
atomic files, the listening record, the agents' client configs and guidance,
log scrubbing, static files, the commands' shared helpers, text safety). It
imports none of Vetted's other packages."""

__version__ = "0.1.0"
