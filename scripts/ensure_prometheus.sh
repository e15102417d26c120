#!/usr/bin/env bash
# Make sure a Prometheus server exists for the metric reporter tests (tests/runtime/metrics): install
# Debian's prometheus package when we are root, otherwise say how. The tests start their own
# throwaway server (streamkernel/testing/prometheus.py) and scrape the reporters with it; without
# the binary they are skipped with that reason, so this never fails. The package's own service is
# not started (no systemd here; where there is one, it is stopped again: the tests need none).
set -u
PROMETHEUS_BIN="${STREAMKERNEL_PROMETHEUS:-$(command -v prometheus || echo /usr/bin/prometheus)}"
if [ -x "$PROMETHEUS_BIN" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "prometheus: $PROMETHEUS_BIN is missing; installing Debian's prometheus package ..."
  if (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null 2>&1; }); then
    if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet prometheus 2>/dev/null; then
      systemctl stop prometheus >/dev/null 2>&1 || true
    fi
    if [ -x /usr/bin/prometheus ]; then
      echo "prometheus: installed (/usr/bin/prometheus)"
    else
      echo "prometheus: Debian's package is installed but /usr/bin/prometheus is missing; the reporter tests with a real Prometheus will be skipped." >&2
    fi
    exit 0
  fi
  echo "prometheus: apt-get install prometheus failed; the reporter tests with a real Prometheus will be skipped." >&2
  exit 0
fi
cat >&2 <<MSG
prometheus: no $PROMETHEUS_BIN, so the tests scraping the metric reporters with a real Prometheus are skipped. To run them:
  Debian/Ubuntu:  sudo apt-get install prometheus
  elsewhere:      point STREAMKERNEL_PROMETHEUS at a Prometheus server binary (2.x)
MSG
exit 0
