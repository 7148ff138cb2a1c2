#!/usr/bin/env bash
# Check the units with `systemd-analyze verify` (any warning fails) and print the
# sandbox rating. ExecStart is pointed at the readdod on PATH, since verify
# insists the binary exists.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

if ! command -v systemd-analyze >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get install -y -qq systemd >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq systemd >/dev/null 2>&1; } \
            || true
    fi
fi
if ! command -v systemd-analyze >/dev/null; then
    echo "SKIP systemd unit verification: systemd-analyze is not available here"
    exit 0
fi
exe="$(command -v readdod || true)"
exe="$(realpath "${exe:-/bin/true}")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/system" "$work/user" "$work/run"
cp "$here"/readdod.service "$here"/readdod.socket "$work/system/"
cp "$here"/user/readdod.service "$here"/user/readdod.socket "$work/user/"
sed -i "s#^ExecStart=[^ ]*#ExecStart=$exe#" "$work"/system/readdod.service "$work"/user/readdod.service

status=0
check() {
    local out
    out="$("$@" 2>&1)" || status=1
    if [ -n "$out" ]; then
        echo "$out"
        status=1
    fi
}
check systemd-analyze verify "$work"/system/readdod.service "$work"/system/readdod.socket
XDG_RUNTIME_DIR="$work/run" check systemd-analyze --user verify \
    "$work"/user/readdod.service "$work"/user/readdod.socket
if [ "$status" != 0 ]; then
    echo "systemd-analyze verify: the units above have problems"
    exit 1
fi
echo "systemd-analyze verify: system and user units OK"
systemd-analyze security --offline=yes "$work"/system/readdod.service 2>&1 | tail -n 1 || true
