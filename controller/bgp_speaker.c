/*
 * bgp_speaker: see bgp_speaker.h. Both FIFOs are opened read-write: an open
 * never blocks, and neither end sees end-of-file when the other goes away.
 */
#include "controller/bgp_speaker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"

#define WRITE_TIMEOUT_MS 3000   /* a speaker that takes no command this long is down */
#define STOP_WAIT_MS 5000       /* TERM, then KILL */

static void sleep_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL); }

static int path_in(const struct bgp_speaker *s, const char *name, char *out, size_t len)
{
    return (size_t)snprintf(out, len, "%s/%s", s->dir, name) >= len ? -ENAMETOOLONG : 0;
}

static int too_long(const struct bgp_speaker *s, char *err, size_t errlen)
{
    return tf_fail(err, errlen, -ENAMETOOLONG, "backend_options.bgp_dir %s: path too long", s->dir);
}

bool bgp_speaker_alive(struct bgp_speaker *s)
{
    if (s->pid <= 0)
        return false;
    int st;
    if (s->child && waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->pid = 0;
        return false;
    }
    /* Not ours (adopted): a zombie nobody reaped is dead too. */
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)s->pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static int write_file(const struct bgp_speaker *s, const char *name, const char *text, char *err, size_t errlen)
{
    char path[320], tmp[330];
    if (path_in(s, name, path, sizeof(path)) || (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
        return too_long(s, err, errlen);
    FILE *f = fopen(tmp, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path) < 0) {
        int e = errno ? errno : EIO;
        return tf_fail(err, errlen, -e, "writing %s: %s", path, strerror(e));
    }
    return 0;
}

static int fifo(const struct bgp_speaker *s, const char *name, int *fd, char *err, size_t errlen)
{
    char path[320];
    if (path_in(s, name, path, sizeof(path)))
        return too_long(s, err, errlen);
    struct stat st;
    if (lstat(path, &st) == 0 && !S_ISFIFO(st.st_mode))
        return tf_fail(err, errlen, -EEXIST, "%s: exists and is not a FIFO (remove it)", path);
    if (mkfifo(path, 0600) < 0 && errno != EEXIST)
        return tf_fail(err, errlen, -errno, "mkfifo %s: %s", path, strerror(errno));
    if ((*fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)) < 0)
        return tf_fail(err, errlen, -errno, "opening %s: %s", path, strerror(errno));
    return 0;
}

int bgp_speaker_open(struct bgp_speaker *s, const char *dir, const char *exabgp, char *err, size_t errlen)
{
    memset(s, 0, sizeof(*s));
    s->cmd = s->ev = -1;
    /* exabgp.conf's `run` line splits on blanks, helper.sh quotes with '. */
    if (tf_strlcpy(s->dir, dir, sizeof(s->dir)) >= sizeof(s->dir) || strpbrk(dir, "' \t\n;\"") ||
        tf_strlcpy(s->exabgp, exabgp, sizeof(s->exabgp)) >= sizeof(s->exabgp))
        return tf_fail(err, errlen, -EINVAL, "backend_options.bgp_dir '%.64s' or exabgp: longer than %zu bytes, or "
                       "a blank, quote or ; in the folder's name", dir, sizeof(s->dir) - 1);
    if (mkdir(s->dir, 0700) < 0 && errno != EEXIST)
        return tf_fail(err, errlen, -errno, "backend_options.bgp_dir %s: %s", s->dir, strerror(errno));
    int rc = fifo(s, "cmd", &s->cmd, err, errlen);
    return rc ? rc : fifo(s, "ev", &s->ev, err, errlen);
}

void bgp_speaker_stop(struct bgp_speaker *s)
{
    if (!bgp_speaker_alive(s))
        return;
    kill(s->pid, SIGTERM);
    for (int ms = 0; ms < STOP_WAIT_MS && bgp_speaker_alive(s); ms += 50)
        sleep_ms(50);
    if (bgp_speaker_alive(s)) {
        log_warn("bgp backend: speaker %d did not stop in %d ms; killing it", (int)s->pid, STOP_WAIT_MS);
        kill(s->pid, SIGKILL);
        for (int ms = 0; ms < 1000 && bgp_speaker_alive(s); ms += 50)
            sleep_ms(50);
    }
    s->pid = 0;
}

static int start(struct bgp_speaker *s, char *err, size_t errlen)
{
    char conf[320], pidf[320], logf[320];
    if (path_in(s, "exabgp.conf", conf, sizeof(conf)) || path_in(s, "exabgp.pid", pidf, sizeof(pidf)) ||
        path_in(s, "exabgp.log", logf, sizeof(logf)))
        return too_long(s, err, errlen);
    unlink(pidf);
    struct passwd *pw = getpwuid(geteuid());
    pid_t pid = fork();
    if (pid < 0)
        return tf_fail(err, errlen, -errno, "starting %s: fork: %s", s->exabgp, strerror(errno));
    if (pid == 0) {
        setsid();   /* its own session: it outlives tierflowd (adopted at restart) */
        sigset_t none;   /* tierflowd blocks the signals it takes with sigtimedwait */
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int null = open("/dev/null", O_RDONLY), out = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (null >= 0)
            dup2(null, 0);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        setenv("exabgp_daemon_daemonize", "false", 1);
        setenv("exabgp_daemon_pid", pidf, 1);
        setenv("exabgp_daemon_user", pw ? pw->pw_name : "root", 1);
        setenv("exabgp_api_ack", "true", 1);
        setenv("exabgp_api_cli", "false", 1);
        setenv("exabgp_log_destination", logf, 1);
        execlp(s->exabgp, s->exabgp, conf, (char *)NULL);
        fprintf(stderr, "tierflowd: exec %s: %s\n", s->exabgp, strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    s->child = true;
    sleep_ms(200);
    if (!bgp_speaker_alive(s))
        return tf_fail(err, errlen, -ECHILD, "%s exited at once (see %s)", s->exabgp, logf);
    log_info("bgp backend: speaker %s started (pid %d, %s)", s->exabgp, (int)pid, conf);
    return 0;
}

int bgp_speaker_up(struct bgp_speaker *s, const char *conf, char *err, size_t errlen)
{
    char path[320], *old = NULL, *pidtext = NULL;
    size_t len = 0;
    if (!bgp_speaker_alive(s) && path_in(s, "exabgp.pid", path, sizeof(path)) == 0 &&
        tf_read_file(path, 64, &pidtext, &len) == 0) {
        s->pid = (pid_t)atoi(pidtext);
        s->child = false;
    }
    free(pidtext);
    bool same = path_in(s, "exabgp.conf", path, sizeof(path)) == 0 && tf_read_file(path, 1 << 20, &old, &len) == 0 &&
                !strcmp(old, conf);
    free(old);
    if (bgp_speaker_alive(s) && same) {
        log_info("bgp backend: adopting the running speaker (pid %d) and what it announces", (int)s->pid);
        return 1;
    }
    if (bgp_speaker_alive(s)) {
        log_warn("bgp backend: the running speaker (pid %d) has another configuration: restarting it (its "
                 "sessions drop)", (int)s->pid);
        bgp_speaker_stop(s);
    }
    char junk[4096];
    while (read(s->cmd, junk, sizeof(junk)) > 0 || read(s->ev, junk, sizeof(junk)) > 0)
        ;
    s->linelen = 0;
    char helper[1024];
    snprintf(helper, sizeof(helper),
             "# generated by tierflowd: exabgp's process API <-> tierflowd's FIFOs (bgp_speaker.c).\n"
             "# Both copies in the background, so that a TERM from exabgp ends them at once;\n"
             "# exabgp's end (end of file on stdin) ends them too.\n"
             "exec 3<&0\ncat <>'%s/cmd' & c=$!\ncat <&3 1<>'%s/ev' & e=$!\n"
             "trap 'kill $c $e 2>/dev/null; exit 0' TERM HUP INT\nwait $e\nkill $c 2>/dev/null\n", s->dir, s->dir);
    int rc = write_file(s, "helper.sh", helper, err, errlen);
    if (!rc)
        rc = write_file(s, "exabgp.conf", conf, err, errlen);
    if (!rc && !(rc = start(s, err, errlen)))
        s->qn = 0;
    return rc;
}

int bgp_speaker_send(struct bgp_speaker *s, const char *text, size_t len)
{
    if (!bgp_speaker_alive(s))
        return -ESRCH;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(s->cmd, text + off, len - off);
        if (w > 0) {
            off += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        struct pollfd p = {s->cmd, POLLOUT, 0};
        if (poll(&p, 1, WRITE_TIMEOUT_MS) == 0)
            return -ETIMEDOUT;
    }
    return 0;
}

static void enqueue(struct bgp_speaker *s, enum bgp_speaker_answer kind, uint32_t n, uint32_t tag)
{
    unsigned last = (s->qh + s->qn - 1) % BGP_SPEAKER_QUEUE_MAX;
    if (s->qn && kind == BGP_SPEAKER_ACK && s->q[last].kind == BGP_SPEAKER_ACK) {
        s->q[last].n += n;
        return;
    }
    if (s->qn == BGP_SPEAKER_QUEUE_MAX)   /* answers beyond it are taken as acks */
        return;
    unsigned i = (s->qh + s->qn++) % BGP_SPEAKER_QUEUE_MAX;
    s->q[i].kind = (uint8_t)kind;
    s->q[i].n = n;
    s->q[i].tag = tag;
}

int bgp_speaker_cmd(struct bgp_speaker *s, const char *text, size_t len, enum bgp_speaker_answer kind, uint32_t n,
                    uint32_t tag)
{
    int rc = bgp_speaker_send(s, text, len);
    if (!rc && n)
        enqueue(s, kind, n, tag);
    return rc;
}

unsigned bgp_speaker_pending(const struct bgp_speaker *s) { return s->qn; }

/* One whole line: handed to fn with the command it answers; an ack ends
 * that command. */
static void said(struct bgp_speaker *s, void (*fn)(void *arg, const struct bgp_speaker_said *w), void *arg)
{
    struct bgp_speaker_said w = {.line = s->line, .json = s->line[0] == '{'};
    if (!w.json && s->qn) {
        w.kind = (enum bgp_speaker_answer)s->q[s->qh].kind;
        w.tag = s->q[s->qh].tag;
    }
    w.done = !w.json && !strcmp(s->line, "done");
    w.error = !w.json && !strcmp(s->line, "error");
    fn(arg, &w);
    if ((w.done || w.error) && s->qn && !--s->q[s->qh].n) {
        s->qh = (s->qh + 1) % BGP_SPEAKER_QUEUE_MAX;
        s->qn--;
    }
}

void bgp_speaker_read(struct bgp_speaker *s, void (*fn)(void *arg, const struct bgp_speaker_said *w), void *arg)
{
    char buf[4096];
    ssize_t n;
    while ((n = read(s->ev, buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; i++) {
            if (buf[i] != '\n') {
                if (s->linelen < sizeof(s->line) - 1)
                    s->line[s->linelen++] = buf[i];
                continue;
            }
            s->line[s->linelen] = '\0';
            s->linelen = 0;
            said(s, fn, arg);
        }
}

void bgp_speaker_close(struct bgp_speaker *s)
{
    if (s->cmd >= 0)
        close(s->cmd);
    if (s->ev >= 0)
        close(s->ev);
    s->cmd = s->ev = -1;
}
