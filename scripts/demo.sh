#!/bin/sh
# make demo: one prompt against a provider that is overloaded twice, then
# answers. Shows the event stream, one readable line per event.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
RETRYD=${RETRYD:-$here/../build/retryd}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

plan='[{"error":"529 overloaded_error: Overloaded"},
       {"error":"503 Service Unavailable"},
       {"text":"Retries are handled by retryd, so your editor only sees the answer."}]'

echo "\$ retryd --sim-plan '<2 overloads, then an answer>' --set retry.baseDelayMs=250 --no-session"
echo '> {"id":"1","type":"prompt","message":"What does retryd do?"}'
echo
# The pause lets the printer start first, so its clock is honest.
{ sleep 0.3; printf '%s\n' '{"id":"1","type":"prompt","message":"What does retryd do?"}'; } |
	XDG_CONFIG_HOME="$tmp" "$RETRYD" --sim-plan "$plan" --set retry.baseDelayMs=250 \
		--set sim.chunkDelayMs=15 --no-session |
	python3 "$here/pretty-events.py"
