/* Every op entry that takes tensors, driven by name over the bad-input fixture, so that one data table
 * can break the same kind of tensor on every entry (the layout tests: strides, aliasing, huge shapes).
 * Entries come in three families, one per fixture: the 1.1 ops (ops_setup), MLA (ops_ext_setup_mla) and
 * the linear ops (ops_ext_setup_linear). */
#ifndef OPS_ENTRIES_H
#define OPS_ENTRIES_H

#include "ops_fixture.h"

typedef enum ops_entry {
    E_ATTENTION_PLAN, E_ATTENTION_RUN, E_KV_WRITE, E_MERGE_STATES, E_CASCADE_PLAN, E_CASCADE_RUN,
    E_MLA_PLAN, E_MLA_RUN,
    E_LIGHTNING_PLAN, E_LIGHTNING_RUN, E_GATED_DELTA_PLAN, E_GATED_DELTA_RUN,
    E_COUNT
} ops_entry_t;

typedef enum ops_family { FAMILY_V11, FAMILY_MLA, FAMILY_LINEAR } ops_family_t;

/* The public function an entry is ("attnrt_mla_run"). */
const char *ops_entry_fn(ops_entry_t e);
ops_family_t ops_entry_family(ops_entry_t e);

/* Readies a fresh fixture of `family` for table rows: the attention, cascade and MLA baselines get their
 * lse (so it can be broken too), and each run entry its plan, made from that baseline. */
void ops_entries_prepare(ops_fixture_t *f, ops_family_t family);

/* The tensor `name` (as the entry's messages name it) that entry e takes in the fixture's baseline;
 * fails the test when the entry has no such tensor. */
attnrt_tensor_t *ops_entry_tensor(ops_fixture_t *f, ops_entry_t e, const char *name);

/* Calls entry e on the fixture's baseline args (a run with its prepared plan and the fixture's
 * workspace). A plan made by mistake is destroyed at once; *plan_written tells whether *plan changed. */
attnrt_status_t ops_entry_call(ops_fixture_t *f, ops_entry_t e, int *plan_written);

/* Entry e must fail with `expected` and a message from its function containing `needle` ("a&&b"), write
 * nothing, and (plans) leave *plan alone. `row` names the table row in failure messages. */
void ops_entry_rejects(ops_fixture_t *f, ops_entry_t e, attnrt_status_t expected, const char *needle,
                       const char *row);

/* A device buffer of exactly `bytes` from attnrt_mem_alloc, poisoned and watched until ops_entry_buffer_free. */
void *ops_entry_buffer(ops_fixture_t *f, size_t bytes);
void ops_entry_buffer_free(ops_fixture_t *f, void *dev);

/* The row groups, one per layout test file (test_ops_main.c runs them). */
int ops_run_stride_tests(void);
int ops_run_aliasing_tests(void);
int ops_run_huge_shape_tests(void);
int ops_run_dtype_name_tests(void);

#endif /* OPS_ENTRIES_H */
