/* posix_spawn with both output pipes drained by poll, so a chatty child never blocks on a full pipe. */
#include "run_tool.h"

#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct buffer {
    char  *data;
    size_t len, cap;
} buffer_t;

static int buffer_read(buffer_t *b, int fd)
{
    if (b->cap - b->len < 4097) {
        size_t ncap = b->cap ? b->cap * 2 : 8192;
        char *grown = realloc(b->data, ncap);
        if (!grown) return -1;
        b->data = grown;
        b->cap = ncap;
    }
    ssize_t n = read(fd, b->data + b->len, b->cap - b->len - 1);
    if (n < 0) return errno == EINTR ? 1 : -1;
    b->len += (size_t)n;
    b->data[b->len] = '\0';
    return n > 0; /* 0: end of file */
}

static char **build_env(const char *const extra[])
{
    size_t n = 0, e = 0;
    while (environ[n]) n++;
    while (extra && extra[e]) e++;
    char **env = calloc(n + e + 2, sizeof *env);
    if (!env) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], "ATTNRT_", 7) != 0) env[k++] = environ[i];
    int path_given = 0;
    for (size_t i = 0; i < e; i++) {
        env[k++] = (char *)extra[i];
        if (strncmp(extra[i], "ATTNRT_PLUGIN_PATH=", 19) == 0) path_given = 1;
    }
    if (!path_given) env[k++] = "ATTNRT_PLUGIN_PATH=";
    return env;
}

int run_tool(char *const argv[], const char *const env[], tool_result_t *r)
{
    memset(r, 0, sizeof *r);
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) != 0) return -1;
    if (pipe(err_pipe) != 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        return -1;
    }
    char **envp = build_env(env);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
    posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
    posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
    pid_t pid;
    int rc = envp ? posix_spawn(&pid, argv[0], &fa, NULL, argv, envp) : ENOMEM;
    posix_spawn_file_actions_destroy(&fa);
    free(envp);
    close(out_pipe[1]);
    close(err_pipe[1]);

    buffer_t out = {0}, err = {0};
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    int open_fds = rc == 0 ? 2 : 0, failed = rc != 0;
    while (open_fds > 0 && !failed) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            failed = 1;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            int got = buffer_read(i == 0 ? &out : &err, fds[i].fd);
            if (got < 0) failed = 1;
            if (got == 0) {
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    close(out_pipe[0]);
    close(err_pipe[0]);
    int status = 0;
    if (rc == 0 && waitpid(pid, &status, 0) != pid) failed = 1;
    if (failed) {
        free(out.data);
        free(err.data);
        return -1;
    }
    r->exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->out = out.data ? out.data : calloc(1, 1);
    r->err = err.data ? err.data : calloc(1, 1);
    return r->out && r->err ? 0 : -1;
}

void tool_result_free(tool_result_t *r)
{
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

int count_lines_containing(const char *text, const char *needle)
{
    int count = 0;
    const char *line = text;
    while (*line) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *hit = strstr(line, needle);
        if (hit && hit + strlen(needle) <= line + len) count++;
        line += len + (end != NULL);
    }
    return count;
}

int count_occurrences(const char *text, const char *needle)
{
    int count = 0;
    size_t n = strlen(needle);
    for (const char *p = strstr(text, needle); n && p; p = strstr(p + n, needle)) count++;
    return count;
}
