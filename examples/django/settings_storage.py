# precompress's Django storage + whitenoise: the static-file part of a Django
# settings.py. Merge it into the settings.py that `django-admin startproject`
# wrote (it defines BASE_DIR). Needs the precompress package installed in the
# project's Python (docs/django.md).

import django

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"  # noqa: F821 (defined by startproject)

# whitenoise's CompressedManifestStaticFilesStorage, compressing with precompress.
if django.VERSION >= (4, 2):
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "precompress.django.CompressedManifestStaticFilesStorage"},
    }
else:  # Django 4.1 and older (Debian 12 ships 3.2)
    STATICFILES_STORAGE = "precompress.django.CompressedManifestStaticFilesStorage"

# Every WHITENOISE_ setting keeps its meaning, for instance:
# WHITENOISE_KEEP_ONLY_HASHED_FILES = True
# WHITENOISE_SKIP_COMPRESS_EXTENSIONS = ["jpg", "png", "woff2", "map"]

# startproject's list, with whitenoise right after SecurityMiddleware.
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
