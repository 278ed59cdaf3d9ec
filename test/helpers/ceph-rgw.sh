#!/bin/sh
# A throwaway single-node Ceph (1 monitor, 1 in-memory OSD, no manager, `auth none`) and the RADOS Gateway, an
# S3-compatible server, on 127.0.0.1, everything in one folder. Used by test/helpers/rgw.ts; runnable by hand:
#
#   ceph-rgw.sh start DIR MONPORT RGWPORT [WATCHPID]   launch the daemons (returns once radosgw is launched)
#   ceph-rgw.sh user DIR                               create the S3 user TESTKEY / TESTSECRET (RGW answering)
#   ceph-rgw.sh stop DIR                               kill every daemon whose pid is in DIR/run, then remove DIR
#
# Every daemon writes its pid to DIR/run/*.pid. With WATCHPID, a watchdog (its pid in DIR/run/watchdog.pid) kills
# the daemons and removes DIR once that process is gone, so a test runner killed with SIGKILL leaves nothing behind.
# Packages: ceph-mon ceph-osd radosgw ceph-common (Debian).
set -eu

die() { echo "ceph-rgw.sh: $*" >&2; exit 1; }

# True while process $1 runs (a zombie, state Z, has exited: only its parent can reap it).
running() {
  [ -r "/proc/$1/stat" ] && ! grep -q '^[0-9]* ([^)]*) Z' "/proc/$1/stat" 2>/dev/null
}

# Kills the daemons named in DIR/run/*.pid (SIGKILL: the cluster is in memory and thrown away) and waits ~3 s at most.
kill_daemons() {
  dir=$1
  pids=
  for f in "$dir"/run/mon.a.pid "$dir"/run/osd.0.pid "$dir"/run/client.rgw.a.pid; do
    [ -f "$f" ] && pids="$pids $(cat "$f")"
  done
  [ -n "$pids" ] || return 0
  # shellcheck disable=SC2086
  kill -9 $pids 2>/dev/null || true
  i=0
  while [ $i -lt 30 ]; do
    left=
    for p in $pids; do
      if running "$p"; then left="$left $p"; fi
    done
    [ -z "$left" ] && return 0
    sleep 0.1
    i=$((i + 1))
  done
}

start() {
  C=$1; MP=$2; RP=$3; WATCH=${4:-}
  [ -d "$C" ] || die "no folder $C"
  mkdir -p "$C/run" "$C/log" "$C/mon.a" "$C/osd.0"
  FSID=$(cat /proc/sys/kernel/random/uuid)
  cat > "$C/ceph.conf" <<EOF
[global]
fsid = $FSID
mon host = v2:127.0.0.1:$MP
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
ms client mode = crc
ms mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 1
osd objectstore = memstore
memstore device bytes = 2147483648
osd crush chooseleaf type = 0
run dir = $C/run
admin socket = $C/run/\$name.asok
log file = $C/log/\$name.log
pid file = $C/run/\$name.pid
client mount timeout = 60
rados mon op timeout = 60
[mon.a]
mon data = $C/mon.a
[osd.0]
osd data = $C/osd.0
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$RP tcp_nodelay=1
rgw dns name = 127.0.0.1
EOF
  if [ -n "$WATCH" ]; then
    # the watchdog: detached from the caller's pipes, polls its parent once a second
    (
      trap '' HUP
      while running "$WATCH" && [ -f "$C/ceph.conf" ]; do sleep 1; done
      kill_daemons "$C"
      [ -f "$C/ceph.conf" ] && rm -rf "$C"
    ) </dev/null >/dev/null 2>&1 &
    echo $! > "$C/run/watchdog.pid"
  fi
  ceph-authtool --create-keyring "$C/mon.keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  monmaptool --create --addv a "[v2:127.0.0.1:$MP]" --fsid "$FSID" "$C/monmap" >/dev/null
  ceph-mon -c "$C/ceph.conf" -i a --mkfs --monmap "$C/monmap" --keyring "$C/mon.keyring"
  ceph-mon -c "$C/ceph.conf" -i a
  timeout 90 ceph -c "$C/ceph.conf" --connect-timeout 60 osd create >/dev/null || die "the monitor did not answer (see $C/log/mon.a.log)"
  ceph-osd -c "$C/ceph.conf" -i 0 --mkfs >"$C/log/osd-mkfs.out" 2>&1 || die "ceph-osd --mkfs failed: $(tail -3 "$C/log/osd-mkfs.out")"
  ceph-osd -c "$C/ceph.conf" -i 0 >"$C/log/osd-start.out" 2>&1 || die "ceph-osd did not start: $(tail -3 "$C/log/osd-start.out")"
  timeout 90 ceph -c "$C/ceph.conf" --connect-timeout 60 osd crush add osd.0 1.0 host=localhost root=default >/dev/null 2>&1 || die "cannot place osd.0"
  radosgw -c "$C/ceph.conf" -n client.rgw.a || die "radosgw did not start (see $C/log/client.rgw.a.log)"
}

user() {
  C=$1
  timeout 90 radosgw-admin -c "$C/ceph.conf" -n client.rgw.a user create --uid=test --display-name=test \
    --access-key=TESTKEY --secret=TESTSECRET >"$C/log/user.out" 2>&1 || die "radosgw-admin user create failed: $(tail -3 "$C/log/user.out")"
}

stop() {
  C=$1
  [ -f "$C/ceph.conf" ] || return 0
  kill_daemons "$C"
  if [ -f "$C/run/watchdog.pid" ]; then kill "$(cat "$C/run/watchdog.pid")" 2>/dev/null || true; fi
  rm -rf "$C"
}

case "${1:-}" in
  start) [ $# -ge 4 ] || die "usage: ceph-rgw.sh start DIR MONPORT RGWPORT [WATCHPID]"; start "$2" "$3" "$4" "${5:-}" ;;
  user) [ $# -eq 2 ] || die "usage: ceph-rgw.sh user DIR"; user "$2" ;;
  stop) [ $# -eq 2 ] || die "usage: ceph-rgw.sh stop DIR"; stop "$2" ;;
  *) die "usage: ceph-rgw.sh start|user|stop DIR …" ;;
esac
