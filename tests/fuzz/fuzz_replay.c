/* fuzz_replay.c - the corpus replayer of builds without libFuzzer: runs LLVMFuzzerTestOneInput on every
 * file of the folders (or the files) given, in name order, so each build checks the committed corpus.
 * A finding aborts; exit 1 when an argument cannot be read or a folder is empty. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "fuzz_replay: cannot open %s\n", path);
        return -1;
    }
    uint8_t buf[1 << 16];
    const size_t n = fread(buf, 1, sizeof buf, f);
    const int err = ferror(f) || !feof(f);
    fclose(f);
    if (err) {
        fprintf(stderr, "fuzz_replay: cannot read %s (or it is over %zu bytes)\n", path, sizeof buf);
        return -1;
    }
    /* a copy of exactly n bytes, so that ASan sees a read past the input's end */
    uint8_t *copy = malloc(n ? n : 1);
    if (!copy) return -1;
    memcpy(copy, buf, n);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b) { return strcmp((*a)->d_name, (*b)->d_name); }

static int is_file(const struct dirent *e) { return e->d_name[0] != '.'; }

/* Replays a folder's files; returns how many, or -1. */
static int replay_dir(const char *dir)
{
    struct dirent **names = NULL;
    const int n = scandir(dir, &names, is_file, by_name);
    if (n < 0) {
        fprintf(stderr, "fuzz_replay: cannot list %s\n", dir);
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (rc == 0 && replay_file(path) != 0) rc = -1;
        free(names[i]);
    }
    free(names);
    return rc == 0 ? n : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 2;
    }
    int total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "fuzz_replay: %s does not exist\n", argv[i]);
            return 1;
        }
        const int n = S_ISDIR(st.st_mode) ? replay_dir(argv[i]) : replay_file(argv[i]) == 0 ? 1 : -1;
        if (n <= 0) {
            fprintf(stderr, "fuzz_replay: %s: %s\n", argv[i], n == 0 ? "no inputs" : "failed");
            return 1;
        }
        total += n;
    }
    fz_context_close();
    printf("fuzz_replay: %d inputs replayed, no finding\n", total);
    return 0;
}
