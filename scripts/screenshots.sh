#!/bin/sh
# Refreshes the console screenshots in docs/ (console-PAGE-desktop.png at
# 1280 px and console-PAGE-phone.png at 390 px): the console's browser
# tests drive Debian's Chromium over a PostgreSQL test database and save
# each page they open when KINDGI_UPDATE_SCREENSHOTS is set.
#
#   KINDGI_TEST_DATABASE_URL=postgres://... scripts/screenshots.sh
set -eu
cd "$(dirname "$0")/.."
: "${KINDGI_TEST_DATABASE_URL:?set KINDGI_TEST_DATABASE_URL to a PostgreSQL the tests may create databases on}"
export KINDGI_TEST_DATABASE_URL
KINDGI_UPDATE_SCREENSHOTS=1 KINDGI_REQUIRE_CHROMIUM=1 \
	go test -count=1 -run 'TestBrowser(RunPageShowsEachStepsContent|RunsPagingReachesThe121stRun|NoPageOverflows)$' ./console
ls -l docs/console-*.png
