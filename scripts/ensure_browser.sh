#!/usr/bin/env bash
# Make sure a Chromium exists for the browser test (tests/browser): install Debian's package
# when we are root, otherwise say how. Playwright drives it (pip's playwright, never
# `playwright install`: no browser download). Without it the browser test is skipped with
# that reason, so this never fails.
set -u
for candidate in chromium chromium-browser; do
  if command -v "$candidate" >/dev/null 2>&1; then
    exit 0
  fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "browser: chromium is missing; installing Debian's chromium package ..."
  if (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1; }); then
    echo "browser: installed ($(chromium --version 2>/dev/null | head -1))"
    exit 0
  fi
  echo "browser: apt-get install chromium failed; the browser test will be skipped." >&2
  exit 0
fi
cat >&2 <<'MSG'
browser: no chromium, so the JupyterLab browser test is skipped. To run it, install one:
  Debian/Ubuntu:  sudo apt-get install chromium
MSG
exit 0
