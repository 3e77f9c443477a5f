/* attnrt-conform: checks a libattnrt plugin's ops against the float64 reference (docs/semantics.md)
 * and prints a table ending in "N passed, N failed, N unsupported". The logic lives in tests/conform
 * (conform.h documents the command line and the exit status). */
#include "conform.h"

int main(int argc, char **argv) { return cf_main(argc, argv); }
