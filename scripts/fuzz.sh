#!/bin/sh
# Runs each libFuzzer target for SECONDS seconds, one after the other.
#
#   scripts/fuzz.sh SECONDS TARGET...      (make fuzz FUZZ_SECONDS=N)
#
# Each target starts from its seeds (tests/fuzz/corpus/TARGET, never written
# to) and a working corpus in build/fuzz/corpus/TARGET that grows across
# runs. A crash, leak, timeout or broken invariant leaves the input in
# build/fuzz/crashes/TARGET/; fix it, then copy it into
# tests/fuzz/regressions/TARGET/ so `make check` replays it for good.
# Inputs long runs found are kept in tests/fuzz/found/TARGET (read, never
# written, like the seeds; `make check` replays them): FUZZ_KEEP=1 merges
# the working corpus into it after the run, only what adds coverage
# (libFuzzer's -merge=1).
# FUZZ_JOBS=N runs N jobs per target (default 1: the machine may be shared).
set -u
cd "$(dirname "$0")/.."
secs=$1
shift
failed=""
for t in "$@"; do
	work=build/fuzz/corpus/$t
	crashes=build/fuzz/crashes/$t
	mkdir -p "$work" "$crashes" "tests/fuzz/found/$t"
	extra=""
	[ -f "tests/fuzz/$t.dict" ] && extra="-dict=tests/fuzz/$t.dict"
	[ "${FUZZ_JOBS:-1}" -gt 1 ] && extra="$extra -jobs=$FUZZ_JOBS -workers=$FUZZ_JOBS"
	echo "fuzz: $t for ${secs}s"
	# shellcheck disable=SC2086
	build/fuzz/fuzz-$t -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$crashes/" -print_final_stats=1 $extra \
		"$work" "tests/fuzz/corpus/$t" "tests/fuzz/found/$t" >build/fuzz/$t.log 2>&1
	rc=$?
	if [ $rc -eq 0 ] && [ "${FUZZ_KEEP:-0}" = 1 ]; then
		before=$(ls "tests/fuzz/found/$t" | wc -l)
		build/fuzz/fuzz-$t -merge=1 -timeout=10 -rss_limit_mb=2048 \
			"tests/fuzz/found/$t" "$work" >build/fuzz/$t.merge.log 2>&1 || rc=$?
		echo "fuzz: $t: kept $(($(ls "tests/fuzz/found/$t" | wc -l) - before)) new inputs in tests/fuzz/found/$t"
	fi
	grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ +DONE)' build/fuzz/$t.log |
		sed "s/^/fuzz: $t: /"
	if [ $rc -ne 0 ]; then
		failed="$failed $t"
		echo "fuzz: $t FAILED (exit $rc); input in $crashes/, log build/fuzz/$t.log:"
		grep -E 'ERROR|invariant|SUMMARY|Test unit written' build/fuzz/$t.log | head -20
	fi
done
if [ -n "$failed" ]; then
	echo "fuzz: crashes in:$failed"
	exit 1
fi
echo "fuzz: $# targets, ${secs}s each, no crash"
