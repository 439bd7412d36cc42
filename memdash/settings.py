"""memdash settings: one module, driven by environment variables.

With nothing set it runs on the embedded default: SQLite in ``var/memdash.sqlite3``, tasks run
right away in the web process, DEBUG on. Production sets ``MEMDASH_ENV=production`` (or
``DEBUG=0``), ``SECRET_KEY``, ``ALLOWED_HOSTS`` and ``DATABASE_URL``.
"""

import json
import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.utils.csp import CSP

from memdash.core.logic.flags import read_flag
from memdash.floors import APPS

BASE_DIR = Path(__file__).resolve().parent.parent
# Nothing is created here: the SQLite backend makes the directory of its file when it opens it
# (memdash.core.sqlite), collectstatic makes STATIC_ROOT, the storage makes MEDIA_ROOT's folders.
VAR_DIR = Path(os.environ.get("MEMDASH_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool) -> bool:
    """A yes/no switch; a word that is neither stops the start (a mistyped `SECURE_SSL_REDIRECT`
    must not quietly turn the redirect off)."""
    value = read_flag(os.environ.get(name), default)
    if value is None:
        raise RuntimeError(f"{name} must be 1 or 0 (true/false, yes/no, on/off)")
    return value


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def env_list(name: str, default: str = "") -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


PRODUCTION = os.environ.get("MEMDASH_ENV", "").lower() == "production"
DEBUG = env_bool("DEBUG", not PRODUCTION)

SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "memdash-development-only-key-never-use-in-production-0123456789"  # noqa: S105

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,testserver" if DEBUG else "")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",  # runserver leaves /static/ to whitenoise, as in production
    "memdash.core.staticfiles.StaticFilesConfig",  # django.contrib.staticfiles, no source maps
    "django.contrib.humanize",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_tasks_db",
    "axes",
    *(f"memdash.{app}" for app in APPS),  # floor by floor (memdash/floors.py)
]

MIDDLEWARE = [
    "memdash.core.middleware.requests_keep_the_collector",
    # Outermost but one: what an upload sets going runs after the answer is sent, not before.
    "memdash.core.middleware.follow_ups_after_the_answer",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Pages, JSON and CSV compressed (static files come compressed from whitenoise, above, and
    # never reach it). BREACH: the only secret a page carries is the CSRF token, which Django
    # masks afresh on every response.
    "django.middleware.gzip.GZipMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "memdash.core.middleware.refuse_nul_characters",
    "memdash.core.middleware.one_value_per_api_parameter",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "memdash.core.middleware.site_404_under_debug",  # after the user is known: the page's header
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 page
]

ROOT_URLCONF = "memdash.site.urls"

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
    },
]

WSGI_APPLICATION = "memdash.wsgi.application"

# --- Database -------------------------------------------------------------------------------
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'memdash.sqlite3'}"),
        conn_max_age=env_int("DB_CONN_MAX_AGE", 60),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["ENGINE"] = "memdash.core.sqlite"  # makes the file's directory
    # WAL lets the page read while an import writes; IMMEDIATE avoids lock upgrades mid-import.
    # A page cache of 64 MB (SQLite's default is 2 MB) holds an import's dirty pages until the
    # commit instead of spilling them to the log as it goes (a large snapshot stores faster,
    # measured). It is only as large as the pages a connection touched.
    cache_kib = env_int("MEMDASH_SQLITE_CACHE_MB", 64) * 1024
    DATABASES["default"]["OPTIONS"] = {
        "init_command": (
            f"PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-{cache_kib};"
        ),
        "transaction_mode": "IMMEDIATE",
        "timeout": 30,
    }
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Tasks ----------------------------------------------------------------------------------
# "immediate": the embedded default, tasks run in the web process. "database": tasks are queued
# in the database and run by `manage.py db_worker` on any number of machines.
TASKS_BACKEND = os.environ.get("MEMDASH_TASKS", "immediate")
TASKS = {
    "default": {
        "BACKEND": {
            "immediate": "django.tasks.backends.immediate.ImmediateBackend",
            "database": "django_tasks_db.DatabaseBackend",
        }[TASKS_BACKEND],
    }
}

# --- Alerts (memdash.alerts): e-mail and webhooks ----------------------------------------------
# E-mail goes out through SMTP when EMAIL_HOST is set, and in production (to localhost without
# it); otherwise each message is written to a file in var/outbox/ (the embedded default and the
# demo; the alerts page shows what was sent).
_SMTP_HOST = os.environ.get("EMAIL_HOST", "localhost" if PRODUCTION else "")
MAILERS = {
    "default": {
        "BACKEND": "django.core.mail.backends.smtp.EmailBackend",
        "OPTIONS": {
            "host": _SMTP_HOST, "port": env_int("EMAIL_PORT", 25),
            "username": os.environ.get("EMAIL_HOST_USER", ""),
            "password": os.environ.get("EMAIL_HOST_PASSWORD", ""),
            "use_tls": env_bool("EMAIL_USE_TLS", False), "timeout": 10,
        },
    }
    if _SMTP_HOST
    else {
        "BACKEND": "django.core.mail.backends.filebased.EmailBackend",
        "OPTIONS": {"file_path": str(VAR_DIR / "outbox")},
    }
}  # fmt: skip
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "memdash@localhost")
# What links in alerts start with: the address users open memdash at.
MEMDASH_PUBLIC_URL = os.environ.get("MEMDASH_PUBLIC_URL", "http://127.0.0.1:8000")
# Webhooks to loopback and private addresses: refused in production (an app's admin is not the
# operator, and must not reach the server's own network), allowed on a laptop.
MEMDASH_ALERTS_ALLOW_PRIVATE_HOSTS = env_bool("MEMDASH_ALERTS_ALLOW_PRIVATE_HOSTS", not PRODUCTION)

# --- Cache: call trees built on demand and their jobs' progress, build summaries' flags ---------
# Every process must read what another built (a worker builds a tree, a web process answers it),
# so the cache is shared: Redis with REDIS_URL (Django's own backend, the `redis` client), else
# the database (`memdash_cache`, made by core's migration 0005) when tasks run in workers; the
# embedded default (one process, tasks run in it) keeps it in memory.
# "throttle" holds the counters of memdash.core.throttle (failed token and key authentications,
# uploads per key), apart from the trees so that neither pushes the other out: in Redis with
# REDIS_URL, shared by every web process; without it in each process's memory, so that each
# process counts alone (docs/scaling.md, "Without Redis").
REDIS_URL = os.environ.get("REDIS_URL", "")
CACHE_TABLE = "memdash_cache"
if REDIS_URL:
    SHARED_CACHE: dict[str, object] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
    }
elif TASKS_BACKEND == "database":
    SHARED_CACHE = {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": CACHE_TABLE,
        "OPTIONS": {"MAX_ENTRIES": 2000},
    }
else:
    SHARED_CACHE = {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "OPTIONS": {"MAX_ENTRIES": 200},
    }
CACHES = {
    "default": SHARED_CACHE,
    "throttle": {**SHARED_CACHE, "KEY_PREFIX": "throttle"}
    if REDIS_URL
    else {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "throttle",
        "OPTIONS": {"MAX_ENTRIES": 100_000},
    },
}
# A call tree built on demand from more allocation rows than this (the row_count of the snapshots
# it reads) is built by a task (memdash.allocations.reads.calltree.jobs) while the page shows its
# progress, so that no web process is held for seconds; the tree reaches the web processes
# through the shared cache above.
MEMDASH_TREE_INLINE_ROWS = env_int("MEMDASH_TREE_INLINE_ROWS", 200_000)
# A build's statistics table of at most this many snapshots is made from their totals when its
# table made ahead (memdash.allocations.writes.build_views) is out of date; a larger build's page
# shows the one made ahead, saying from how many snapshots, while a task makes it again.
MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS = env_int("MEMDASH_BUILD_TABLE_INLINE_SNAPSHOTS", 200)
# When tasks run at once (the embedded default), a snapshot's Allocations List of at most this
# many rows is made with its upload; a larger one once the web process has answered the upload,
# and after `import_snapshot` by `manage.py make_allocation_lists` (memdash.allocations.tasks).
MEMDASH_LIST_INLINE_ROWS = env_int("MEMDASH_LIST_INLINE_ROWS", 200_000)

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",  # first: refuses a locked-out login before the password
    "django.contrib.auth.backends.ModelBackend",
]

# --- Throttling (memdash.core.throttle; logins through django-axes) ---------------------------
# After MEMDASH_AUTH_FAILURE_LIMIT failures within MEMDASH_AUTH_LOCKOUT_SECONDS, logins of that
# account, and logins, tokens and keys from that address, are answered 429 (with Retry-After)
# for MEMDASH_AUTH_LOCKOUT_SECONDS, the right password or secret too. 0 turns it off.
MEMDASH_AUTH_FAILURE_LIMIT = env_int("MEMDASH_AUTH_FAILURE_LIMIT", 10)
MEMDASH_AUTH_LOCKOUT_SECONDS = env_int("MEMDASH_AUTH_LOCKOUT_SECONDS", 900)
MEMDASH_UPLOADS_PER_KEY_PER_MINUTE = env_int("MEMDASH_UPLOADS_PER_KEY_PER_MINUTE", 600)
# The header a reverse proxy in front of memdash writes the client's address into (its last
# address is taken): only when every request comes through that proxy, else clients could name
# any address. Unset: the address of the connection.
MEMDASH_TRUSTED_PROXY_HEADER = os.environ.get("MEMDASH_TRUSTED_PROXY_HEADER", "")
AXES_ENABLED = MEMDASH_AUTH_FAILURE_LIMIT > 0
AXES_FAILURE_LIMIT = MEMDASH_AUTH_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(seconds=MEMDASH_AUTH_LOCKOUT_SECONDS)
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]  # either one: per address and per account
AXES_CLIENT_IP_CALLABLE = "memdash.core.throttle.client_address"
AXES_LOCKOUT_CALLABLE = "memdash.site.web.views.login_locked_out"
AXES_RESET_ON_SUCCESS = False  # a login to one's own account must not clear an address's count
AXES_DISABLE_ACCESS_LOG = True  # failures only: no row per successful login
AXES_VERBOSE = False

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "core:app_list"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static and uploaded files ----------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(os.environ.get("MEMDASH_UPLOAD_DIR", VAR_DIR / "uploads"))
MEDIA_URL = "/media/"  # never served publicly: raw uploads are read by the task only
# Collected static files: hashed names, brotli and gzip copies made by `collectstatic`, served by
# whitenoise with far-future cache headers. Production, and the demo (scripts/serve.sh collects
# them and sets MEMDASH_COLLECTED_STATIC=1 under DEBUG); otherwise whitenoise serves the sources.
COLLECTED_STATIC = not DEBUG or env_bool("MEMDASH_COLLECTED_STATIC", False)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "memdash.core.staticfiles.CollectedStaticFilesStorage"
        if COLLECTED_STATIC
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}
WHITENOISE_USE_FINDERS = not COLLECTED_STATIC
WHITENOISE_AUTOREFRESH = not COLLECTED_STATIC

# --- Ingest limits ----------------------------------------------------------------------------
MEMDASH_MAX_BODY_BYTES = env_int("MEMDASH_MAX_BODY_BYTES", 200 * 1024 * 1024)
MEMDASH_MAX_DECOMPRESSED_BYTES = env_int("MEMDASH_MAX_DECOMPRESSED_BYTES", 2 * 1024 * 1024 * 1024)
# What a worker may spend parsing one upload: its decompressed size × its format's measured factor
# (memdash.ingest.writes.parse_memory) must fit, checked on receipt and before parsing (413 past
# it).
MEMDASH_MAX_PARSE_MEMORY_BYTES = env_int("MEMDASH_MAX_PARSE_MEMORY_BYTES", 1024 * 1024 * 1024)
# Debug files (dSYMs are large): the body, what a zip of them may unpack to and how many members
# it may have (checked from its directory before anything is written, and while writing).
MEMDASH_MAX_DEBUG_FILE_BYTES = env_int("MEMDASH_MAX_DEBUG_FILE_BYTES", 4 * 1024 * 1024 * 1024)
MEMDASH_MAX_DEBUG_UNPACKED_BYTES = env_int(
    "MEMDASH_MAX_DEBUG_UNPACKED_BYTES", 16 * 1024 * 1024 * 1024
)
MEMDASH_MAX_DEBUG_ZIP_MEMBERS = env_int("MEMDASH_MAX_DEBUG_ZIP_MEMBERS", 10_000)
# A worker's claim on an upload lasts this long: past it, the worker is taken for dead and the
# upload queued again (memdash.ingest.tasks). Longer than the longest ingest (docs/performance.md
# has the figures), else a live worker's work is done twice.
MEMDASH_UPLOAD_LEASE_SECONDS = env_int("MEMDASH_UPLOAD_LEASE_SECONDS", 30 * 60)
# On Citus (detected from the extension: memdash.site.writes.citus), the shards of each
# distributed table when the migrations distribute it; Citus's own default. Fewer make a test
# database quicker to set up.
MEMDASH_CITUS_SHARD_COUNT = env_int("MEMDASH_CITUS_SHARD_COUNT", 32)
# The bodies of rejected uploads (a gzip bomb, a document refused) are kept this long to be
# looked into, then deleted by `manage.py prune_uploads`.
MEMDASH_REJECTED_BODY_DAYS = env_int("MEMDASH_REJECTED_BODY_DAYS", 7)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024  # form fields; files stream to disk
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024

# Local git checkouts of apps' sources, by bundle id, for owner suggestions. A server setting
# (JSON in the environment), never a path typed in by a web user.
MEMDASH_SOURCE_CHECKOUTS: dict[str, str] = {}
if os.environ.get("MEMDASH_SOURCE_CHECKOUTS"):
    MEMDASH_SOURCE_CHECKOUTS = json.loads(os.environ["MEMDASH_SOURCE_CHECKOUTS"])

# --- REST framework and OpenAPI ---------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "memdash.core.auth.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "memdash.core.renderers.StrictJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": ["memdash.core.renderers.ORJSONRenderer"]
    + (["rest_framework.renderers.BrowsableAPIRenderer"] if DEBUG else []),
    "DEFAULT_SCHEMA_CLASS": "memdash.core.web.schema.AutoSchema",
    "EXCEPTION_HANDLER": "memdash.core.web.api.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "memdash API",
    "DESCRIPTION": "Upload memory snapshots, sessions, retain cycles and leak reports; read "
    "statistics, call trees, diffs, FOOM rates and clusters.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",  # served from our static files, never a CDN
    "COMPONENT_SPLIT_REQUEST": True,
    # The schema and its docs page describe every endpoint: for signed-in users and tokens only.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Row ids in paths (memdash.core.web.converters): up to the widest id column.
    "PATH_CONVERTER_OVERRIDES": {"id": {"type": "integer", "minimum": 0, "maximum": 2**63 - 1}},
}

# --- Security (production) --------------------------------------------------------------------
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # the call-tree page reads it for fetch(); forms carry it too
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# Every page, in the demo as in production: scripts only from our own static files (no inline
# script, no eval), so a string a device sent can never run, even if it slipped past escaping.
# Styles may be inline: plotly sets them on the SVG it draws.
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF],
    "style-src": [CSP.SELF, CSP.UNSAFE_INLINE],
    "img-src": [CSP.SELF, "data:"],
    "font-src": [CSP.SELF, "data:"],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "form-action": [CSP.SELF],
    "frame-ancestors": [CSP.NONE],
}
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    # Preload lists a domain in the browsers' own HSTS list, which takes months to undo: an
    # operator opts in (SECURE_HSTS_PRELOAD=true) once every subdomain serves HTTPS. Until then
    # check --deploy's reminder (security.W021) is answered here, not ignored in CI.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
    # A task's start and end are INFO lines; with DEBUG on, Django's own `django` logger would
    # print each (twice, through the root too) for every upload the demo loads. Failures are
    # ERROR and still shown; `db_worker -v 2` sets its own level.
    "loggers": {"django.tasks": {"level": os.environ.get("LOG_LEVEL", "WARNING")}},
}
