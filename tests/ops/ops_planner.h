/* The "planner" device: the test plugin's TP_PLANNER variant, built alone into this build folder. Its
 * plans of paged attention, MLA, lightning and gated delta ask for a workspace, which cpu plans never
 * do, so the runs' workspace checks have something to refuse. The suite runs with ATTNRT_PLUGIN=cpu,
 * so a planner test's setup shuts the runtime down and lets discovery find that folder too; its
 * teardown shuts down again and restores the environment. */
#ifndef OPS_PLANNER_H
#define OPS_PLANNER_H

#include "ops_fixture.h"

/* cmocka fixtures: ops_setup / ops_ext_setup_mla / ops_ext_setup_linear with planner:0 discoverable. */
int ops_planner_setup(void **state);
int ops_planner_setup_mla(void **state);
int ops_planner_setup_linear(void **state);
int ops_planner_teardown(void **state);
#define OPS_PLANNER_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_planner_setup, ops_planner_teardown)
#define OPS_PLANNER_MLA_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_planner_setup_mla, ops_planner_teardown)
#define OPS_PLANNER_LINEAR_TEST(fn) cmocka_unit_test_setup_teardown(fn, ops_planner_setup_linear, ops_planner_teardown)

/* A context on planner:0, opened once per test into f->other_ctx (the teardown closes it). */
attnrt_context_t *ops_planner_context(ops_fixture_t *f);
/* A pool on planner:0 laid out as `like` (dtype, slot shape, slots, the same lowest slots allocated),
 * kept for the teardown; *tensor gets its tensor. */
attnrt_state_pool_t *ops_planner_pool(ops_fixture_t *f, const attnrt_state_pool_t *like, attnrt_tensor_t *tensor);

#endif /* OPS_PLANNER_H */
