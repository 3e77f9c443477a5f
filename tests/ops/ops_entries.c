/* Every op entry that takes tensors, driven by name over the bad-input fixture (see ops_entries.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ops_entries.h"

static const struct {
    const char  *fn;
    ops_family_t family;
} entries[E_COUNT] = {
    [E_ATTENTION_PLAN] = {"attnrt_attention_plan", FAMILY_V11},
    [E_ATTENTION_RUN] = {"attnrt_attention_run", FAMILY_V11},
    [E_KV_WRITE] = {"attnrt_kv_write", FAMILY_V11},
    [E_MERGE_STATES] = {"attnrt_merge_states", FAMILY_V11},
    [E_CASCADE_PLAN] = {"attnrt_cascade_plan", FAMILY_V11},
    [E_CASCADE_RUN] = {"attnrt_cascade_run", FAMILY_V11},
    [E_MLA_PLAN] = {"attnrt_mla_plan", FAMILY_MLA},
    [E_MLA_RUN] = {"attnrt_mla_run", FAMILY_MLA},
    [E_LIGHTNING_PLAN] = {"attnrt_lightning_plan", FAMILY_LINEAR},
    [E_LIGHTNING_RUN] = {"attnrt_lightning_run", FAMILY_LINEAR},
    [E_GATED_DELTA_PLAN] = {"attnrt_gated_delta_plan", FAMILY_LINEAR},
    [E_GATED_DELTA_RUN] = {"attnrt_gated_delta_run", FAMILY_LINEAR},
};

/* The plans the run entries use, made by ops_entries_prepare for the current test's fixture. */
static struct {
    const ops_fixture_t *fixture;
    attnrt_plan_t       *plan[E_COUNT];
} prepared;

const char *ops_entry_fn(ops_entry_t e) { return entries[e].fn; }

ops_family_t ops_entry_family(ops_entry_t e) { return entries[e].family; }

void ops_entries_prepare(ops_fixture_t *f, ops_family_t family)
{
    memset(&prepared, 0, sizeof prepared);
    prepared.fixture = f;
    if (family == FAMILY_V11) {
        f->att.lse = &f->lse;
        prepared.plan[E_ATTENTION_RUN] = ops_attention_plan_ok(f);
        prepared.plan[E_CASCADE_RUN] = ops_cascade_plan_ok(f);
    } else if (family == FAMILY_MLA) {
        f->x->mla.lse = &f->lse;
        prepared.plan[E_MLA_RUN] = ops_mla_plan_ok(f);
    } else {
        prepared.plan[E_LIGHTNING_RUN] = ops_lightning_plan_ok(f);
        prepared.plan[E_GATED_DELTA_RUN] = ops_gated_delta_plan_ok(f);
    }
}

typedef struct named {
    const char      *name;
    attnrt_tensor_t *t;
} named_t;

static attnrt_tensor_t *find(const named_t *list, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i].name, name) == 0) return list[i].t;
    return NULL;
}

#define FIND(list, name) find((list), sizeof(list) / sizeof((list)[0]), (name))

attnrt_tensor_t *ops_entry_tensor(ops_fixture_t *f, ops_entry_t e, const char *name)
{
    attnrt_tensor_t *t = NULL;
    switch (e) {
    case E_ATTENTION_PLAN:
    case E_ATTENTION_RUN:
    case E_CASCADE_PLAN:
    case E_CASCADE_RUN: {
        const named_t list[] = {{"query", &f->query}, {"key_cache", &f->key_cache}, {"value_cache", &f->value_cache},
                                {"block_table", &f->block_table}, {"query_start_loc", &f->qsl},
                                {"seq_lens", &f->seq_lens}, {"out", &f->out}, {"lse", &f->lse},
                                {"prefix_block_table", &f->prefix_block_table},
                                {"prefix_seq_lens", &f->prefix_seq_lens}};
        t = FIND(list, name);
        if (t == &f->prefix_block_table || t == &f->prefix_seq_lens)
            t = e == E_CASCADE_PLAN || e == E_CASCADE_RUN ? t : NULL;
        break;
    }
    case E_KV_WRITE: {
        const named_t list[] = {{"key", &f->key}, {"value", &f->value}, {"slot_mapping", &f->slot_mapping},
                                {"key_cache", &f->key_cache}, {"value_cache", &f->value_cache}};
        t = FIND(list, name);
        break;
    }
    case E_MERGE_STATES: {
        const named_t list[] = {{"out", &f->out}, {"out_lse", &f->lse}, {"states[0]", &f->states[0]},
                                {"states[1]", &f->states[1]}, {"lses[0]", &f->state_lses[0]},
                                {"lses[1]", &f->state_lses[1]}};
        t = FIND(list, name);
        break;
    }
    case E_MLA_PLAN:
    case E_MLA_RUN: {
        ops_ext_t *x = f->x;
        const named_t list[] = {{"query", &x->mla_query}, {"kv_cache", &x->mla_cache}, {"block_table", &f->block_table},
                                {"query_start_loc", &f->qsl}, {"seq_lens", &f->seq_lens}, {"out", &f->out},
                                {"lse", &f->lse}};
        t = FIND(list, name);
        break;
    }
    case E_LIGHTNING_PLAN:
    case E_LIGHTNING_RUN: {
        ops_ext_t *x = f->x;
        const named_t list[] = {{"query", &x->lq}, {"key", &x->lk}, {"value", &x->lv}, {"out", &x->lout},
                                {"slopes", &x->slopes}, {"state", &x->lin_state}, {"query_start_loc", &f->qsl},
                                {"state_indices", &x->lin_state_indices}, {"has_initial_state", &x->lin_has_init}};
        t = FIND(list, name);
        break;
    }
    case E_GATED_DELTA_PLAN:
    case E_GATED_DELTA_RUN: {
        ops_ext_t *x = f->x;
        const named_t list[] = {{"query", &x->gq}, {"key", &x->gk}, {"value", &x->gv}, {"g", &x->g},
                                {"beta", &x->beta}, {"out", &x->gout}, {"state", &x->gdn_state},
                                {"query_start_loc", &f->qsl}, {"state_indices", &x->gdn_state_indices},
                                {"has_initial_state", &x->gdn_has_init}};
        t = FIND(list, name);
        break;
    }
    default:
        break;
    }
    if (!t) fail_msg("%s takes no tensor \"%s\" in the fixture", ops_entry_fn(e), name);
    return t;
}

static attnrt_plan_t *run_plan(const ops_fixture_t *f, ops_entry_t e)
{
    if (prepared.fixture != f || !prepared.plan[e])
        fail_msg("%s: call ops_entries_prepare first (no plan for this fixture)", ops_entry_fn(e));
    return prepared.plan[e];
}

attnrt_status_t ops_entry_call(ops_fixture_t *f, ops_entry_t e, int *plan_written)
{
    attnrt_plan_t *p = OPS_SENTINEL_PLAN;
    void *ws = f->dev[OB_WORKSPACE];
    const size_t ws_bytes = f->bytes[OB_WORKSPACE];
    ops_ext_t *x = f->x;
    attnrt_status_t st = ATTNRT_ERR_INTERNAL;
    switch (e) {
    case E_ATTENTION_PLAN: st = attnrt_attention_plan(f->ctx, &f->att, &f->batch, &p); break;
    case E_ATTENTION_RUN: st = attnrt_attention_run(run_plan(f, e), &f->att, ws, ws_bytes, NULL); break;
    case E_KV_WRITE: st = attnrt_kv_write(f->ctx, &f->kvw, NULL); break;
    case E_MERGE_STATES: st = attnrt_merge_states(f->ctx, &f->merge, NULL); break;
    case E_CASCADE_PLAN: st = attnrt_cascade_plan(f->ctx, &f->cas, &f->cas_host, &p); break;
    case E_CASCADE_RUN: st = attnrt_cascade_run(run_plan(f, e), &f->cas, ws, ws_bytes, NULL); break;
    case E_MLA_PLAN: st = attnrt_mla_plan(f->ctx, &x->mla, &f->batch, &p); break;
    case E_MLA_RUN: st = attnrt_mla_run(run_plan(f, e), &x->mla, ws, ws_bytes, NULL); break;
    case E_LIGHTNING_PLAN:
        st = attnrt_lightning_plan(f->ctx, &x->lin, &x->lin_batch, &x->lin_states, x->lin_pool, &p);
        break;
    case E_LIGHTNING_RUN: st = attnrt_lightning_run(run_plan(f, e), &x->lin, ws, ws_bytes, NULL); break;
    case E_GATED_DELTA_PLAN:
        st = attnrt_gated_delta_plan(f->ctx, &x->gdn, &x->lin_batch, &x->gdn_states, x->gdn_pool, &p);
        break;
    case E_GATED_DELTA_RUN: st = attnrt_gated_delta_run(run_plan(f, e), &x->gdn, ws, ws_bytes, NULL); break;
    default: fail_msg("no entry %d", (int)e);
    }
    *plan_written = p != OPS_SENTINEL_PLAN;
    if (st == ATTNRT_OK && p && p != OPS_SENTINEL_PLAN) attnrt_plan_destroy(p); /* made by mistake */
    return st;
}

void ops_entry_rejects(ops_fixture_t *f, ops_entry_t e, attnrt_status_t expected, const char *needle,
                       const char *row)
{
    char call[160];
    snprintf(call, sizeof call, "%s (%s)", ops_entry_fn(e), row);
    int plan_written = 0;
    ops_snapshot(f);
    attnrt_status_t st = ops_entry_call(f, e, &plan_written);
    ops_check_rejected(f, call, ops_entry_fn(e), st, expected, needle, __FILE__, __LINE__);
    if (plan_written) fail_msg("%s: a refused plan call wrote *plan", call);
}

void *ops_entry_buffer(ops_fixture_t *f, size_t bytes)
{
    void *dev = NULL;
    OPS_OK(attnrt_mem_alloc(f->ctx, bytes, &dev));
    ops_poison(f, dev, bytes);
    ops_watch(f, "a buffer of the test", dev, bytes);
    return dev;
}

void ops_entry_buffer_free(ops_fixture_t *f, void *dev)
{
    ops_unwatch(f, dev);
    OPS_OK(attnrt_mem_free(f->ctx, dev));
}
