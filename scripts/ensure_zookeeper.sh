#!/usr/bin/env bash
# Make sure Apache ZooKeeper exists for the high-availability tests (tests/runtime/highavailability):
# install Debian's zookeeper package when we are root, otherwise say how. The tests start their
# own throwaway server from /usr/share/zookeeper/bin/zkServer.sh (streamkernel/testing/zookeeper.py);
# without it they are skipped with that reason, so this never fails.
set -u
ZK_SERVER_SH="${STREAMKERNEL_ZKSERVER:-/usr/share/zookeeper/bin/zkServer.sh}"
if [ -x "$ZK_SERVER_SH" ] || [ -f "$ZK_SERVER_SH" ]; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "zookeeper: $ZK_SERVER_SH is missing; installing Debian's zookeeper package ..."
  if (DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null 2>&1 || { apt-get update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper >/dev/null 2>&1; }); then
    if [ -f "$ZK_SERVER_SH" ]; then
      echo "zookeeper: installed ($ZK_SERVER_SH)"
    else
      echo "zookeeper: Debian's package is installed but $ZK_SERVER_SH is still missing (STREAMKERNEL_ZKSERVER?); the ZooKeeper tests will be skipped." >&2
    fi
    exit 0
  fi
  echo "zookeeper: apt-get install zookeeper failed; the ZooKeeper tests will be skipped." >&2
  exit 0
fi
cat >&2 <<MSG
zookeeper: no $ZK_SERVER_SH, so the high-availability tests on ZooKeeper are skipped. To run them:
  Debian/Ubuntu:  sudo apt-get install zookeeper
  elsewhere:      point STREAMKERNEL_ZKSERVER at an Apache ZooKeeper's bin/zkServer.sh
MSG
exit 0
