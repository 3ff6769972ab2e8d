#!/bin/sh
# Collect and precompress Django's static files. Run it from the directory of
# manage.py, at build or deploy time, before the app server starts: whitenoise
# looks for each file's .br and .gz once, at startup.
set -eu
"${PYTHON:-python3}" manage.py collectstatic --noinput
"${PRECOMPRESS:-precompress}" staticfiles/
