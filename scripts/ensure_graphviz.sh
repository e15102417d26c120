#!/usr/bin/env bash
# Make sure graphviz's `dot` binary exists: install Debian's package when we are root,
# otherwise say exactly how. Graphs still render as text without it, so this never fails.
set -u
if command -v dot >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "graphviz: 'dot' is missing; installing Debian's graphviz package ..."
  if (apt-get install -y -qq graphviz >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq graphviz >/dev/null 2>&1; }); then
    echo "graphviz: installed ($(dot -V 2>&1))"
    exit 0
  fi
  echo "graphviz: apt-get install graphviz failed; graphs will be drawn as text." >&2
  exit 0
fi
cat >&2 <<'MSG'
graphviz: the 'dot' binary is missing, so graphs are drawn as text only. To draw SVG, install it:
  Debian/Ubuntu:  sudo apt-get install graphviz
  conda:          conda install -c conda-forge graphviz
  macOS:          brew install graphviz
MSG
exit 0
