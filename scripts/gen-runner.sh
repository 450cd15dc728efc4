#!/bin/sh
# Write the Check runner's main() for every `Suite *NAME_suite(void)` that the
# given test files define, so adding a test file needs no other edit.
set -eu
suites=$(sed -n 's/^Suite \*\([a-z_0-9]*\)_suite(void)$/\1/p' "$@")
echo '#include <check.h>'
echo '#include <stdlib.h>'
for s in $suites; do echo "Suite *${s}_suite(void);"; done
echo 'int main(void)'
echo '{'
echo '	SRunner *sr = srunner_create(NULL);'
for s in $suites; do echo "	srunner_add_suite(sr, ${s}_suite());"; done
echo '	srunner_run_all(sr, CK_NORMAL);'
echo '	int failed = srunner_ntests_failed(sr);'
echo '	srunner_free(sr);'
echo '	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;'
echo '}'
