/* conform.h - attnrt-conform, the conformance checker of libattnrt, as a library.
 *
 * tools/attnrt_conform.c is a thin main over cf_main; everything else (cases, the device runs, the
 * comparison with the float64 reference of tests/reference, the report) lives in tests/conform.
 *
 *   attnrt-conform [--plugin NAME|PATH] [--device NAME] [--device-option KEY=VALUE]... [--seed N]
 *                  [--filter SUBSTR] [--cases N] [--min-passed [OP=]N]... [--streams] [--json] [--list] [-v]
 *   attnrt-conform --version | --help
 *
 * Exit status: 0 when no case failed (unsupported cases are not failures), 1 when one did, when fewer
 * cases of an op passed than --min-passed asks, or when the run could not start, 2 for a usage error.
 * The hidden --self-test-corrupt perturbs every result after
 * its run and exits 1 only when the checker caught every perturbation (77, "skipped", when no case
 * could run), so a test with should_fail proves the checker can fail.
 */
#ifndef ATTNRT_CONFORM_H
#define ATTNRT_CONFORM_H

int cf_main(int argc, char **argv);

#endif
