/* Fixtures, contexts and pools on the planner device (see ops_planner.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ops_planner.h"

#ifndef OPS_PLANNER_DIR
#error "OPS_PLANNER_DIR must name the folder of attnrt_planner.so"
#endif

static char saved_plugin[256], saved_path[4096];
static int had_plugin, had_path;

static void save(const char *name, char *copy, size_t cap, int *had)
{
    const char *v = getenv(name);
    *had = v != NULL;
    snprintf(copy, cap, "%s", v ? v : "");
}

static void restore(const char *name, const char *copy, int had)
{
    if (had) setenv(name, copy, 1);
    else unsetenv(name);
}

/* Every context is closed between tests, so the runtime can shut down and discover again. */
static int rediscover(void)
{
    attnrt_status_t st = attnrt_shutdown();
    if (st != ATTNRT_OK) print_error("attnrt_shutdown: %s\n", attnrt_last_error());
    return st == ATTNRT_OK ? 0 : -1;
}

static int with_planner(void **state, int (*setup)(void **))
{
    save("ATTNRT_PLUGIN", saved_plugin, sizeof saved_plugin, &had_plugin);
    save("ATTNRT_PLUGIN_PATH", saved_path, sizeof saved_path, &had_path);
    setenv("ATTNRT_PLUGIN", "", 1);
    setenv("ATTNRT_PLUGIN_PATH", OPS_PLANNER_DIR, 1);
    if (rediscover() != 0) return -1;
    return setup(state);
}

int ops_planner_setup(void **state) { return with_planner(state, ops_setup); }
int ops_planner_setup_mla(void **state) { return with_planner(state, ops_ext_setup_mla); }
int ops_planner_setup_linear(void **state) { return with_planner(state, ops_ext_setup_linear); }

int ops_planner_teardown(void **state)
{
    int rc = ops_ext_teardown(state); /* the plain fixture's teardown too, when there is no extension */
    restore("ATTNRT_PLUGIN", saved_plugin, had_plugin);
    restore("ATTNRT_PLUGIN_PATH", saved_path, had_path);
    if (rediscover() != 0) rc = -1;
    return rc;
}

attnrt_context_t *ops_planner_context(ops_fixture_t *f)
{
    if (f->other_ctx) return f->other_ctx;
    attnrt_status_t st = attnrt_open("planner:0", &f->other_ctx);
    if (st != ATTNRT_OK)
        fail_msg("attnrt_open(planner:0) returned %s: %s (the test's fixture makes " OPS_PLANNER_DIR
                 " a plugin folder: is attnrt_planner.so built there?)", attnrt_status_name(st), attnrt_last_error());
    return f->other_ctx;
}

attnrt_state_pool_t *ops_planner_pool(ops_fixture_t *f, const attnrt_state_pool_t *like, attnrt_tensor_t *tensor)
{
    attnrt_tensor_t t = {.struct_size = sizeof t};
    int32_t slots = 0, free_slots = 0;
    OPS_OK(attnrt_state_pool_tensor(like, &t));
    OPS_OK(attnrt_state_pool_usage(like, &slots, &free_slots));
    attnrt_state_pool_t *pool = NULL;
    OPS_OK(attnrt_state_pool_create(ops_planner_context(f), t.dtype, t.ndim - 1, t.shape + 1, slots, &pool));
    ops_keep_pool(f, pool);
    for (int32_t i = 0; i < slots - free_slots; i++) {
        int32_t slot = -1;
        OPS_OK(attnrt_state_slot_alloc(pool, &slot));
    }
    *tensor = (attnrt_tensor_t){.struct_size = sizeof *tensor};
    OPS_OK(attnrt_state_pool_tensor(pool, tensor));
    return pool;
}
