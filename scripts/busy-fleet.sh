#!/bin/sh
# busy-fleet.sh start|stop|status: two retryd daemons of yours failing sim
# plans (429 and 503 with retry-after) in a loop, sharing what they see with
# your other daemons (sim.shareFleet), in your runtime dir — the machine of
# issue "a fleet that never surprises". Run `make demo` or `make check` beside
# it: neither may get slower. tests/e2e/busyfleet.py does the work.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
RETRYD=${RETRYD:-$here/../build/retryd}
state=${XDG_RUNTIME_DIR:-/tmp/retryd-$(id -u)}/retryd-busy-fleet
pidfile=$state/pid

running() { [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; }

case ${1:-} in
start)
	if running; then
		echo "busy-fleet: already running (pid $(cat "$pidfile"))"
		exit 0
	fi
	[ -x "$RETRYD" ] || { echo "busy-fleet: no retryd at $RETRYD (run make first)" >&2; exit 1; }
	# Made private (0700) when it is new: the fleet's /tmp/retryd-UID is
	# refused for sharing at any other mode, and mkdir -p would leave it
	# at the umask's 0755 (then the busy fleet would share nothing).
	(umask 077 && mkdir -p "$state")
	RETRYD=$RETRYD nohup python3 "$here/../tests/e2e/busyfleet.py" >"$state/out" 2>"$state/err" &
	echo $! >"$pidfile"
	# Up when it says BUSY (at most 10 s).
	i=0
	while ! grep -q '^BUSY' "$state/out" 2>/dev/null; do
		if ! running || [ $i -ge 100 ]; then
			echo "busy-fleet: did not start: $(cat "$state/err")" >&2
			exit 1
		fi
		sleep 0.1
		i=$((i + 1))
	done
	echo "busy-fleet: started (pid $(cat "$pidfile"); daemons $(sed -n 's/^BUSY //p' "$state/out"))"
	;;
stop)
	if running; then
		kill "$(cat "$pidfile")"
		i=0
		while running && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
		echo "busy-fleet: stopped"
	else
		echo "busy-fleet: not running"
	fi
	rm -f "$pidfile"
	;;
status)
	if running; then echo "busy-fleet: running (pid $(cat "$pidfile"))"; else echo "busy-fleet: not running"; exit 1; fi
	;;
*)
	echo "usage: scripts/busy-fleet.sh start|stop|status" >&2
	exit 2
	;;
esac
