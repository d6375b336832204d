"""Worldloom's one settings module, read from the environment.

With nothing set it runs embedded: SQLite, the in-memory channel layer, Celery tasks run eagerly and an
in-process inference worker. `DATABASE_URL` and `REDIS_URL` switch to PostgreSQL, the Redis channel layer and
a real Celery broker. Every variable read here is listed in the README's table (a test checks it).
"""

from __future__ import annotations

from pathlib import Path

import environ
from csp.constants import NONE, SELF

from common.configuration import ConfigurationError, database_from_url, redis_url_checked

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()

DATABASE_URL = env.str("DATABASE_URL", default="")
REDIS_URL = redis_url_checked("REDIS_URL", env.str("REDIS_URL", default=""))
EMBEDDED = not DATABASE_URL

DEBUG = env.bool("DEBUG", default=EMBEDDED)
# Where embedded data lives (SQLite file, converted model caches); production keeps state in its services.
DATA_DIR = Path(env.str("WORLDLOOM_DATA_DIR", default=str(BASE_DIR / "var")))

SECRET_KEY = env.str("SECRET_KEY", default="")
if not SECRET_KEY:
    if not DEBUG:
        raise ConfigurationError("SECRET_KEY", "must be set when DEBUG is off (production)")
    # Only ever used with DEBUG on, on a developer's machine.
    SECRET_KEY = "django-insecure-embedded-mode-only-never-deploy-this"  # noqa: S105 - DEBUG-only default

ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])
# Forwarded headers (X-Forwarded-For, X-Forwarded-Proto) are believed only from one proxy in front that sets
# them; without one any client could write them, to look like a fresh address or a secure connection.
BEHIND_PROXY = env.bool("BEHIND_PROXY", default=False)
# allauth's limits per address read X-Forwarded-For the same way (its default, 0, takes REMOTE_ADDR).
ALLAUTH_TRUSTED_PROXY_COUNT = 1 if BEHIND_PROXY else 0

INSTALLED_APPS = [
    # daphne first: its runserver serves HTTP and WebSocket through the ASGI application.
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "csp",
    "common",
    "shell",
    "accounts",
    "gallery",
    "moderation",
    "workers",
    "worlds",
    "play",
    "memories",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    # Innermost, because it has no asynchronous form: the whole chain then runs synchronously on the request's
    # thread, where async-capable middleware below a synchronous one would each hop to that thread and back.
    # It still turns the view's lost database into a 503 with a sentence (process_exception sees only the view's
    # exceptions, wherever it stands).
    "common.middleware.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "frontend" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "accounts.context_processors.roles",
            ],
        },
    },
]

if EMBEDDED:
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "worldloom.sqlite3",
            # A play session writes while pages read; without a timeout SQLite answers "database is locked".
            # NORMAL syncs at WAL checkpoints rather than on every logged input: a crash loses at most the last
            # moments, never the database's consistency. (WAL itself is switched on once, see common.preflight.)
            "OPTIONS": {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA synchronous=NORMAL;"},
            # A file, not memory, so that the daphne and worker processes the tests start can share it.
            "TEST": {"NAME": DATA_DIR / "test.sqlite3"},
        }
    }
else:
    DATABASES = {"default": database_from_url("DATABASE_URL", DATABASE_URL)}
    # Under ASGI every request runs on a thread of its own, and persistent connections pile up one per
    # thread until PostgreSQL refuses more ("too many clients"): close by default.
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Fail fast while PostgreSQL is down instead of hanging every request.
        DATABASES["default"].setdefault("OPTIONS", {})["connect_timeout"] = 5
        # A process hands its requests' threads connections from a pool (psycopg_pool) instead of opening one
        # per request: a new PostgreSQL backend costs ~10 ms, more than a gallery page's queries. The consumers'
        # database threads (common.concurrency, 8) keep theirs, so the pool is larger than that. A request that
        # finds the pool empty waits up to 2 s for one, then gets the 503 of a database that is away: while
        # PostgreSQL is down the pool has none to give, and the page must say so at once, not after a long wait.
        DATABASE_POOL_SIZE = env.int("DATABASE_POOL_SIZE", default=12)
        if DATABASE_POOL_SIZE:
            if DATABASES["default"]["CONN_MAX_AGE"]:
                raise ConfigurationError("DATABASE_CONN_MAX_AGE", "must be 0 while DATABASE_POOL_SIZE is set")
            DATABASES["default"]["OPTIONS"]["pool"] = {"min_size": 1, "max_size": DATABASE_POOL_SIZE, "timeout": 2}
        # PgBouncer in transaction mode cannot hold server-side cursors open between transactions.
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = env.bool("DATABASE_BEHIND_PGBOUNCER", default=False)

# Django requests a process runs at once (shell.front): more only take turns at the one GIL, each holding one
# of the pool's connections (the pool keeps 8 for the consumers' database threads besides). The rest wait on
# the event loop, at most HTTP_REQUEST_WAIT_SECONDS, then get a 503 that says the server is busy.
HTTP_REQUESTS_RUNNING = env.int("HTTP_REQUESTS_RUNNING", default=4)
HTTP_REQUEST_WAIT_SECONDS = env.float("HTTP_REQUEST_WAIT_SECONDS", default=15.0)
if HTTP_REQUESTS_RUNNING < 1:
    raise ConfigurationError("HTTP_REQUESTS_RUNNING", "must be at least 1")

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "accounts.User"

if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # group_expiry must outlive daphne's WebSocket timeout or long sessions silently leave their groups.
            "CONFIG": {"hosts": [REDIS_URL], "capacity": 200, "expiry": 60, "group_expiry": 86400 * 2},
        },
        # Frames go out on Redis pub/sub: published once, and each daphne process hands them to its own
        # browsers. The default layer writes a copy per browser into Redis and reads each back with a round trip
        # of its own, which in a busy Live world takes much of daphne's time.
        # A frame nobody is subscribed to is gone, as a frame should be: the next one replaces it.
        "frames": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}},
    }
    CACHES = {"default": {"BACKEND": "common.cache.RedisCacheClientsKept", "LOCATION": REDIS_URL}}
    # A signed-in page reads its session from Redis, not PostgreSQL (writes go to both). Only with the shared
    # cache: with a cache in each process, a log-out in one would leave the session alive in the others.
    SESSION_ENGINE = "django.contrib.sessions.backends.cached_db"
else:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
        "frames": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
    }
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Celery: a broker of its own (RabbitMQ, say) may be named; otherwise Redis; with neither, tasks run inline.
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = env.str("CELERY_RESULT_BACKEND", default=REDIS_URL)
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # An eager call still takes a producer from the broker's pool (to serialize its arguments as a sent task's
    # would be), and kombu reads an empty broker URL as AMQP on localhost, warning so. The in-memory
    # transport is the broker the embedded mode has: in-process, nothing to reach. It ignores the host, but
    # kombu warns of any URL without one.
    CELERY_BROKER_URL = "memory://localhost/"
CELERY_TASK_EAGER_PROPAGATES = True
# Tasks must survive a killed worker child: acknowledge after running, requeue when the child is lost.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Every password check (log-in pages, token API, admin) goes through the lock-out in accounts.lockout first;
# ModelBackend stays listed so that sessions signed in through it stay signed in.
AUTHENTICATION_BACKENDS = [
    "accounts.backends.LockoutAuthenticationBackend",
    "django.contrib.auth.backends.ModelBackend",
]
ACCOUNT_LOGIN_METHODS = {"username", "email"}
ACCOUNT_SIGNUP_FIELDS = ["username*", "email*", "password1*", "password2*"]
# Signing up ends at "we sent you an e-mail" whether or not the address already has an account (its owner is
# mailed that someone tried): the password reset form already hides which addresses exist, and sign-up would
# otherwise say it outright. allauth can hide it only when every address is verified before its first log-in.
ACCOUNT_EMAIL_VERIFICATION = "mandatory"
ACCOUNT_PREVENT_ENUMERATION = True
ACCOUNT_LOGIN_ON_EMAIL_CONFIRMATION = True
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = True
ACCOUNT_ADAPTER = "accounts.adapters.WorldloomAccountAdapter"
# After 5 failed sign-ins to one account in 5 minutes, by any way in, even the right password is refused until
# the window closes: accounts.lockout counts them, so allauth keeps only its limit per address (10 a minute).
# The counts live in the cache, which REDIS_URL shares between processes; without it each process counts alone.
ACCOUNT_RATE_LIMITS = {"login_failed": "10/m/ip"}
# Authenticator apps and recovery codes; no WebAuthn, whose pages need inline scripts the CSP refuses.
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes"]
MFA_TOTP_ISSUER = "Worldloom"
# A stolen moderator password alone must not take down worlds or suspend people. Off in the embedded demo so
# that `make run` works without an authenticator app.
MODERATORS_REQUIRE_SECOND_FACTOR = env.bool("MODERATORS_REQUIRE_SECOND_FACTOR", default=not DEBUG)
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"
EMAIL_BACKEND = env.str("EMAIL_BACKEND", default="django.core.mail.backends.console.EmailBackend")
# Where the file-based backend writes each message (django.core.mail.backends.filebased).
EMAIL_FILE_PATH = env.str("EMAIL_FILE_PATH", default=str(DATA_DIR / "mail"))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    # JSON nested at most 64 deep (see common.parsers); forms and uploads as DRF parses them.
    "DEFAULT_PARSER_CLASSES": [
        "common.parsers.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "common.schema.ViewNamedAutoSchema",
    "EXCEPTION_HANDLER": "common.apis.api_exception_handler",
    "DEFAULT_PAGINATION_CLASS": "common.apis.NewestFirstPagination",
    # Per address: ten token requests a minute (accounts.lockout limits guesses per account whatever the address),
    # and thirty searches with words a minute by people not signed in (the search page and the API together).
    "DEFAULT_THROTTLE_RATES": {"anon": "10/minute", "anon_search": "30/minute"},
    # The address a throttle counts under: X-Forwarded-For's last entry (the one our proxy added) behind a
    # proxy, else the connection's own. Unset, DRF would take the whole header, which any client can write.
    "NUM_PROXIES": 1 if BEHIND_PROXY else 0,
    "PAGE_SIZE": 24,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Worldloom API",
    "DESCRIPTION": "Worlds, characters, stories, play sessions and the gallery of Worldloom.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    # One name for a choice set that several fields share.
    "ENUM_NAME_OVERRIDES": {"VerdictEnum": "moderation.models.Verdict"},
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "frontend" / "static"]
STATIC_ROOT = Path(env.str("STATIC_ROOT", default=str(DATA_DIR / "static")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Hashed names let browsers cache static files forever; `collectstatic` must run first (make does it).
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Requests above these sizes are refused before a view sees them; image fields add their own limits.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env.str("MEDIA_ROOT", default=str(DATA_DIR / "media")))

# Behind a TLS-terminating proxy everything is HTTPS; plain-HTTP loopback (tests, `make run`) turns it off.
HTTPS = env.bool("HTTPS", default=not DEBUG)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
SECURE_SSL_REDIRECT = HTTPS
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=31536000 if HTTPS else 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS
SECURE_HSTS_PRELOAD = HTTPS
if BEHIND_PROXY:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# The load balancer probes /healthz over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
# Only our own scripts run, so markup that slips into a page (creator text, model output) cannot execute.
# Frames reach the player as blob: URLs; "self" covers the page's own ws:// and wss:// in current browsers.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:", "blob:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Inference workers: how often they heartbeat, and after how many missed beats they count as gone.
WORKER_HEARTBEAT_SECONDS = env.int("WORKER_HEARTBEAT_SECONDS", default=5)
WORKER_STALE_AFTER_SECONDS = WORKER_HEARTBEAT_SECONDS * 3
# Engines the studio offers though no worker serving them is connected right now (comma-separated names); empty:
# the engines this process can build. Engines of connected workers are offered either way.
WORLDLOOM_ENGINES = env.list("WORLDLOOM_ENGINES", default=[])
# The bearer token a Prometheus scraper sends for /metrics; unset, /metrics does not exist.
METRICS_TOKEN = env.str("METRICS_TOKEN", default="")
# prometheus-client reads it from the environment itself, in every process that counts; here it tells /metrics
# to add up the processes' files.
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default="")
# How long a session nobody watches keeps its worker slot: long enough to ride out a reload or a blip.
PLAY_PARK_AFTER_SECONDS = env.float("PLAY_PARK_AFTER_SECONDS", default=30.0)
# The in-process worker's language model (see inference.worker.WorkerConfig.language_model).
WORKER_LANGUAGE_MODEL = env.str("WORLDLOOM_LANGUAGE_MODEL", default="local")
# torch's CPU threads in the in-process worker (see inference.worker.WorkerConfig.torch_threads).
WORKER_TORCH_THREADS = env.int("WORLDLOOM_TORCH_THREADS", default=1)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    "loggers": {"django.channels.server": {"level": "WARNING"}},
}
