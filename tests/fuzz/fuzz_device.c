/* fuzz_device.c - the context, device buffers with checked slack, corruption of device metadata,
 * refusal checks and findings (see fuzz.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform_compare.h"
#include "fuzz.h"

#define FZ_ALIGN 256  /* attnrt_mem_alloc rounds to this on cpu: sizes are asked in multiples of it */
#define FZ_SLACK 0xa5 /* what the bytes in front of a tensor hold                                   */

static attnrt_context_t *fz_ctx;
static char fz_case[1024]; /* what the current input decoded to, for the finding's report */

void fz_describe(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fz_case, sizeof fz_case, fmt, ap);
    va_end(ap);
}

void fz_trace(const char *fmt, ...)
{
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("ATTNRT_FUZZ_VERBOSE") != NULL;
    if (!verbose) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz: %s: ", fz_case);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

void fz_describe_more(const char *fmt, ...)
{
    const size_t used = strlen(fz_case);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(fz_case + used, sizeof fz_case - used, fmt, ap);
    va_end(ap);
}

const char *fz_list(char *buf, size_t cap, const int64_t *v, int n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < n && used + 1 < cap; i++) {
        const int w = snprintf(buf + used, cap - used, i ? " %lld" : "%lld", (long long)v[i]);
        if (w < 0) break;
        used += (size_t)w;
    }
    return buf;
}

const char *fz_list32(char *buf, size_t cap, const int32_t *v, int n)
{
    int64_t wide[256];
    if (n > 256) n = 256;
    for (int i = 0; i < n; i++) wide[i] = v[i];
    return fz_list(buf, cap, wide, n);
}

void fz_finding(const char *op, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fuzz finding: %s: ", op);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\nfuzz case: %s\n", fz_case);
    va_end(ap);
    abort();
}

attnrt_context_t *fz_context(void)
{
    if (fz_ctx) return fz_ctx;
    attnrt_status_t st = attnrt_open("cpu:0", &fz_ctx);
    if (st != ATTNRT_OK) {
        /* not a finding: the target cannot work without its device */
        fprintf(stderr, "fuzz: attnrt_open(\"cpu:0\"): %s: %s\n", attnrt_status_name(st), attnrt_last_error());
        exit(2);
    }
    return fz_ctx;
}

void fz_context_close(void)
{
    if (fz_ctx) fz_require_ok("attnrt_close", attnrt_close(fz_ctx));
    fz_ctx = NULL;
    fz_require_ok("attnrt_shutdown", attnrt_shutdown());
}

void fz_require_ok(const char *what, attnrt_status_t st)
{
    if (st != ATTNRT_OK) fz_finding(what, "%s: %s", attnrt_status_name(st), attnrt_last_error());
}

void fz_dev_init(fz_dev_t *dev, fz_in_t *in)
{
    memset(dev, 0, sizeof *dev);
    dev->ctx = fz_context();
    dev->empty_null = fz_bit(in);
    fz_describe_more("; empty tensors %s", dev->empty_null ? "NULL" : "in an allocation");
}

void *fz_upload(fz_dev_t *dev, const void *host, size_t bytes)
{
    if (bytes == 0 && dev->empty_null) return NULL;
    if (dev->count == FZ_MAX_BUFS) fz_finding("fuzz", "target bug: more than %d buffers", FZ_MAX_BUFS);
    fz_buf_t *b = &dev->bufs[dev->count];
    b->alloc = bytes ? (bytes + FZ_ALIGN - 1) / FZ_ALIGN * FZ_ALIGN : FZ_ALIGN; /* empty: all slack */
    b->bytes = bytes;
    unsigned char *image = malloc(b->alloc);
    if (!image) fz_finding("fuzz", "out of host memory");
    memset(image, FZ_SLACK, b->alloc - bytes);
    memcpy(image + b->alloc - bytes, host, bytes);
    fz_require_ok("attnrt_mem_alloc", attnrt_mem_alloc(dev->ctx, b->alloc, &b->base));
    dev->count++;
    fz_require_ok("attnrt_mem_copy_to_device", attnrt_mem_copy_to_device(dev->ctx, b->base, image, b->alloc, NULL));
    free(image);
    return (unsigned char *)b->base + b->alloc - bytes;
}

void fz_download(fz_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    if (bytes) fz_require_ok("attnrt_mem_copy_to_host", attnrt_mem_copy_to_host(dev->ctx, dst, src, bytes, NULL));
}

void fz_overwrite(fz_dev_t *dev, void *dst, const void *src, size_t bytes)
{
    if (bytes) fz_require_ok("attnrt_mem_copy_to_device", attnrt_mem_copy_to_device(dev->ctx, dst, src, bytes, NULL));
}

void fz_dev_check_slack(const fz_dev_t *dev, const char *op)
{
    unsigned char got[FZ_ALIGN];
    for (int i = 0; i < dev->count; i++) {
        const fz_buf_t *b = &dev->bufs[i];
        const size_t slack = b->alloc - b->bytes;
        if (slack == 0) continue;
        fz_require_ok("attnrt_mem_copy_to_host", attnrt_mem_copy_to_host(dev->ctx, got, b->base, slack, NULL));
        for (size_t k = 0; k < slack; k++)
            if (got[k] != FZ_SLACK)
                fz_finding(op, "buffer %d: byte %zu before the tensor's first byte was written (0x%02x): an "
                           "out-of-bounds write", i, slack - k, got[k]);
    }
}

void fz_dev_release(fz_dev_t *dev)
{
    for (int i = dev->count - 1; i >= 0; i--)
        fz_require_ok("attnrt_mem_free", attnrt_mem_free(dev->ctx, dev->bufs[i].base));
    dev->count = 0;
}

void fz_check_refusal(const char *fn, attnrt_status_t st, int valid)
{
    const char *msg = attnrt_last_error();
    fz_trace("refused: %s", msg);
    if (st >= 0 || st < ATTNRT_ERR_INTERNAL)
        fz_finding(fn, "refused with status %d, which is not an error code (message \"%s\")", (int)st, msg);
    if (st == ATTNRT_ERR_INTERNAL) fz_finding(fn, "ATTNRT_ERR_INTERNAL: %s", msg);
    if (!msg[0]) fz_finding(fn, "%s with an empty attnrt_last_error()", attnrt_status_name(st));
    if (!strstr(msg, fn)) fz_finding(fn, "%s: the message does not name %s: \"%s\"", attnrt_status_name(st), fn, msg);
    if (valid && st != ATTNRT_ERR_UNSUPPORTED)
        fz_finding(fn, "refused a call that obeys the contract: %s: %s", attnrt_status_name(st), msg);
}

int fz_corrupt_i32(fz_in_t *in, int32_t *host, int n, int64_t bound, const char *what)
{
    if (n <= 0) return 0;
    const int at = fz_byte(in) % n;
    const int32_t v = fz_wild(in, bound);
    const int changed = host[at] != v;
    host[at] = v;
    fz_describe_more("; %s[%d] = %d", what, at, v);
    return changed;
}

/* Squared norm of row r of a, or of a - b. */
static double row_norm2(const double *a, const double *b, size_t r, size_t dim)
{
    double n = 0.0;
    for (size_t d = 0; d < dim; d++) {
        const double x = a[r * dim + d] - (b ? b[r * dim + d] : 0.0);
        n += x * x;
    }
    return n;
}

void fz_compare(const char *op, const char *what, const double *got, const double *ref, const double *mag,
                const double *ref_lse, size_t tokens, size_t heads, size_t dim, double tol, cf_dtype_t out_dtype)
{
    cf_result_t res;
    memset(&res, 0, sizeof res);
    res.status = CF_PASS;
    if (cf_compare_out(what, got, ref, ref_lse, tokens, heads, dim, tol, cf_dtype_min_normal(out_dtype), &res)) return;
    if (!mag || !isfinite(res.error)) fz_finding(op, "differs from the float64 reference: %s", res.message);
    /* An ill-conditioned result (terms that cancel) is judged against the size of its terms: rounding
     * errors scale with it, a wrong slot, key or decay does not hide below it. */
    for (size_t r = 0; r < tokens * heads; r++) {
        const double err = sqrt(row_norm2(got, ref, r, dim)), scale = sqrt(row_norm2(mag, NULL, r, dim));
        if (err > tol * scale)
            fz_finding(op, "differs from the float64 reference: %s; row t=%zu, h=%zu is off by %.3g, more than "
                       "%.3g x the size of its terms (%.3g)", res.message, r / heads, r % heads, err, tol, scale);
    }
}
