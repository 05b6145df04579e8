/*
 * journal.c: each world's journal of what changed it (docs/STATE.md), Redis's
 * append-only file beside the state file: world-ID.journal.
 *
 *   head     magic "RDJOURNL", version, size of a command,             32 bytes
 *            the world's id, the sequence of the state it follows
 *   record   length, CRC-32 of what follows, type, sequence, tick, body
 *            command: the sender's role and owner key, the decoded command
 *            foci:    the points viewers look at (level of detail)
 *            mark:    nothing: the world reached this tick (once a second)
 *            drop:    a command's sequence: a rollback undid it (rollback.c),
 *                     so a replay skips it (found in a first pass)
 *
 * A record is a command that changed the world, stamped with the tick it
 * applied at (before that tick's step) and its sequence number (the
 * world's count of such commands), or the foci set at a tick boundary when
 * they changed. Records are gathered during a tick boundary and written
 * with one write() at its end, before the replies go out; --journal-fsync
 * says when they reach the disk (always: before the replies; everysec: by
 * a write on the threadpool once a second; never).
 *
 * When a journal cannot be written (a write, an fsync or the open failed:
 * disk full, I/O error), the world keeps running but refuses the commands
 * that would change it (`unavailable`, Redis's MISCONF) until its journal
 * is written again: the records it holds are written again once a second,
 * and every 5 seconds a state file holding everything is tried, which
 * starts the journal afresh (the only way back when records may be lost:
 * a failed fsync, or more than 1 MiB of them). The commands of the
 * boundary whose write failed had applied: their records are kept, and
 * their replies wait until those are written (scheduler.c), so a reply
 * still means journaled.
 *
 * The state file records the sequence it holds (app_state.seq): a replay
 * (at start, or ragdolld --replay) loads it and applies the records after
 * it, stepping the world to each record's tick. First the whole journal is
 * checked: another world's journal, one that follows a newer state, or
 * commands whose sequence skips are refused before anything applies. A
 * bad record at the end (a crash mid-write) is a torn tail: the replay
 * ends there and it is cut off; a bad record with good ones after it (or
 * a bad tail longer than any write, 4 MiB) is damage: the replay ends there too, and the server
 * keeps the whole file (world-ID.journal.refused) before cutting it. When a state file lands, the
 * records it holds are dropped from the journal (compaction).
 */
#include "persist.h"
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOURNAL_HEAD    32u
#define RECORD_HEAD     32u /* length, crc, type + pad, seq, tick */
#define RECORD_COMMAND  1u
#define RECORD_FOCI     2u
#define RECORD_MARK     3u /* no body: the world reached this tick */
#define RECORD_DROP     4u /* body: the sequence of a command a rollback undid */
#define JOURNAL_VERSION 2u
#define COMMAND_BODY    (16u + sizeof(rdp_command))
#define FOCI_BODY_MAX   (8u + SIM_MAX_FOCI * sizeof(sim_vec3))
/// The longest record, after its length and CRC.
#define RECORD_MAX (RECORD_HEAD - 8 + (COMMAND_BODY > FOCI_BODY_MAX ? COMMAND_BODY : FOCI_BODY_MAX))
/// Records kept for a journal that cannot be written; past it they are
/// dropped and only a state file brings the world back to durable.
#define BUFFER_MAX (1u << 20)
/// The longest write: a boundary's records (an inbox of 1024 commands)
/// or what waited while the journal was down, with room to spare. A bad
/// tail longer than this is not a torn write.
#define TORN_MAX  (4u << 20)
#define RETRY_NS  1000000000ull /* the records written again */
#define RESAVE_NS 5000000000ull /* a state file and a fresh journal tried */

static const char k_magic[8] = {'R', 'D', 'J', 'O', 'U', 'R', 'N', 'L'};

void app__journal_name(uint64_t id, char* buf, size_t cap) {
    snprintf(buf, cap, "world-%" PRIu64 ".journal", id);
}

static void journal_path(const app_server* app, uint64_t id, char* buf, size_t cap) {
    char name[64];
    app__journal_name(id, name, sizeof name);
    snprintf(buf, cap, "%s/%s", app->cfg.state_dir, name);
}

static void say(app_server* app, app_log_level level, const char* event, uint64_t world,
                const char* reason) {
    app_log_line l;
    if (app__log_begin(&app->log, &l, level, APP_LOGK_ALWAYS, event, uv_hrtime())) {
        app__log_u64(&l, "world", world);
        app__log_str(&l, "reason", reason);
        app__log_end(&l);
    }
}

static void head_bytes(uint8_t out[JOURNAL_HEAD], uint64_t world, uint64_t base_seq) {
    const uint32_t version = JOURNAL_VERSION, cmd = (uint32_t)sizeof(rdp_command);
    memcpy(out, k_magic, 8);
    memcpy(out + 8, &version, 4);
    memcpy(out + 12, &cmd, 4);
    memcpy(out + 16, &world, 8);
    memcpy(out + 24, &base_seq, 8);
}

// write() all of it; false (errno set) on an error.
static bool write_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            if (k == 0) {
                errno = EIO;
            }
            return false;
        }
        p += k;
        n -= (size_t)k;
    }
    return true;
}

// ---------------------------------------------------------------------------
// A journal that cannot be written
// ---------------------------------------------------------------------------

// w's journal failed (`what`, logged once until it recovers). With `lost`
// the records may not all be on the disk (a failed fsync) or were not kept:
// only a state file makes the world durable again.
static void go_down(app_server* app, app_world* w, bool lost, const char* what) {
    snprintf(w->journal_why, sizeof w->journal_why, "%s", what);
    if (!w->journal_failed) {
        w->journal_failed = true;
        app->journal_failures++;
        char msg[512];
        snprintf(msg, sizeof msg, "%s; commands that change the world are refused until it can be",
                 what);
        say(app, APP_LOG_ERROR, "journal_failed", w->id, msg);
        const uint64_t now = uv_hrtime();
        w->journal_retry_ns = now + RETRY_NS;
        w->journal_resave_ns = now + RETRY_NS; // the first state file soon
    }
    if (lost) {
        w->journal_lost = true;
        w->jlen = 0;
        app__journal_close(w); // (a deleted one frees its space)
    }
}

// Whether w's files are still the ones it writes: its journal neither
// deleted, nor replaced or moved at its path, nor cut or grown by someone
// else (at least `bytes` long, exactly when `exact`), and its state file
// there. Else false with why: the records written may go nowhere a
// restart reads, so only a state file makes the world durable again.
static bool files_intact(app_server* app, app_world* w, uint64_t bytes, bool exact, char* why,
                         size_t cap) {
    struct stat fst, pst;
    char path[4096];
    journal_path(app, w->id, path, sizeof path);
    if (fstat(w->journal_fd, &fst) != 0 || fst.st_nlink == 0) {
        snprintf(why, cap, "its journal was deleted from the state dir");
        return false;
    }
    if (stat(path, &pst) != 0 || pst.st_ino != fst.st_ino || pst.st_dev != fst.st_dev) {
        snprintf(why, cap, "its journal was replaced or moved");
        return false;
    }
    if ((uint64_t)fst.st_size < bytes || (exact && (uint64_t)fst.st_size != bytes)) {
        snprintf(why, cap,
                 "its journal was changed under the server (%lld bytes, %" PRIu64 " written)",
                 (long long)fst.st_size, bytes);
        return false;
    }
    char name[64];
    app__state_name(w->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
    if (stat(path, &pst) != 0) {
        snprintf(why, cap, "its state file is gone from the state dir");
        return false;
    }
    // Emptied, overwritten or replaced in place (not while this server's
    // own write of it is landing: that renames a new one over it).
    if (w->saving == NULL && w->state_ino != 0 &&
        ((uint64_t)pst.st_ino != w->state_ino || (uint64_t)pst.st_dev != w->state_dev ||
         (uint64_t)pst.st_size != w->state_size)) {
        snprintf(why, cap, "its state file was changed under the server");
        return false;
    }
    return true;
}

void app__journal_lose(app_server* app, app_world* w, const char* why) {
    go_down(app, w, true, why);
}

bool app__journal_down(const app_server* app, const app_world* w) {
    return app->cfg.state_dir != NULL && w->journal_failed;
}

bool app__journal_retry(app_server* app, app_world* w, uint64_t now) {
    if (!app__journal_down(app, w)) {
        return true;
    }
    if (now < w->journal_retry_ns || app->state_dir_taken) {
        return false; // (another server holds the state dir: nothing is written)
    }
    w->journal_retry_ns = now + RETRY_NS;
    // Written again where the last good record ended (a failed write may
    // have left part of a record), if the file is still this journal.
    char why[200];
    if (!w->journal_lost && w->journal_fd >= 0 &&
        !files_intact(app, w, w->journal_bytes, false, why, sizeof why)) {
        go_down(app, w, true, why);
    }
    if (!w->journal_lost && w->journal_fd >= 0 &&
        ftruncate(w->journal_fd, (off_t)w->journal_bytes) == 0 &&
        write_all(w->journal_fd, w->jbuf, w->jlen) &&
        (app->cfg.journal_fsync != APP_FSYNC_ALWAYS || fdatasync(w->journal_fd) == 0)) {
        w->journal_bytes += w->jlen;
        w->journal_dirty = app->cfg.journal_fsync == APP_FSYNC_EVERYSEC;
        w->jlen = 0;
        w->journal_failed = false;
        say(app, APP_LOG_INFO, "journal_recovered", w->id, "its records are written again");
        return true;
    }
    if (now < w->journal_resave_ns || w->saving != NULL) {
        return false; // (an older state file landing after it would not follow the journal)
    }
    w->journal_resave_ns = now + RESAVE_NS;
    // A state file that holds everything, and a journal from it on.
    if (app__persist_save_now(app, w, NULL, 0) == 0 && !w->journal_failed) {
        say(app, APP_LOG_INFO, "journal_recovered", w->id,
            "a state file holds the world, and its journal starts again from it");
        return true;
    }
    return false;
}

// ---------------------------------------------------------------------------
// Appending
// ---------------------------------------------------------------------------

static uint8_t* room(app_world* w, size_t n) {
    if (w->jlen + n > w->jcap) {
        size_t cap = w->jcap < 4096 ? 4096 : w->jcap;
        while (cap < w->jlen + n) {
            cap *= 2;
        }
        uint8_t* p = realloc(w->jbuf, cap);
        if (p == NULL) {
            return NULL;
        }
        w->jbuf = p;
        w->jcap = cap;
    }
    uint8_t* at = w->jbuf + w->jlen;
    w->jlen += n;
    return at;
}

// Appends a record of `type` with body (n bytes) to w's buffer.
static void record(app_server* app, app_world* w, uint32_t type, const void* body, size_t n) {
    if (app->cfg.state_dir == NULL || w->journal_lost) {
        return; // no journals, or only a state file brings it back
    }
    if (w->journal_failed && w->jlen + RECORD_HEAD + n > BUFFER_MAX) {
        go_down(app, w, true, "more than 1 MiB of records wait to be written");
        return;
    }
    uint8_t* r = room(w, RECORD_HEAD + n);
    if (r == NULL) {
        go_down(app, w, true, "out of memory for its records");
        return;
    }
    const uint32_t len = (uint32_t)(RECORD_HEAD - 8 + n); // after length and crc
    const uint64_t tick = sim_world_tick(w->sim);
    memset(r, 0, RECORD_HEAD);
    memcpy(r, &len, 4);
    memcpy(r + 8, &type, 4);
    memcpy(r + 16, &w->seq, 8);
    memcpy(r + 24, &tick, 8);
    if (n > 0) {
        memcpy(r + RECORD_HEAD, body, n);
    }
    const uint32_t crc = app__crc32(r + 8, len);
    memcpy(r + 4, &crc, 4);
}

void app__journal_command(app_server* app, app_world* w, const app_cmd* e) {
    uint8_t body[COMMAND_BODY];
    const uint32_t role = (uint32_t)e->role, pad = 0;
    memcpy(body, &role, 4);
    memcpy(body + 4, &pad, 4);
    memcpy(body + 8, &e->owner, 8);
    memcpy(body + 16, &e->cmd, sizeof e->cmd);
    record(app, w, RECORD_COMMAND, body, sizeof body);
}

void app__journal_mark(app_server* app, app_world* w, uint64_t now) {
    if (now >= w->next_mark_ns) {
        w->next_mark_ns = now + 1000000000ull;
        record(app, w, RECORD_MARK, NULL, 0);
    }
}

void app__journal_drop(app_server* app, app_world* w, uint64_t seq) {
    record(app, w, RECORD_DROP, &seq, sizeof seq);
    app__journal_commit(app, w);
}

bool app__journal_foci(app_server* app, app_world* w, const sim_vec3* foci, uint32_t n) {
    if (n == w->jfoci_count && memcmp(foci, w->jfoci, n * sizeof *foci) == 0) {
        return false;
    }
    memcpy(w->jfoci, foci, n * sizeof *foci);
    w->jfoci_count = n;
    uint8_t body[FOCI_BODY_MAX];
    const uint32_t pad = 0;
    memcpy(body, &n, 4);
    memcpy(body + 4, &pad, 4);
    memcpy(body + 8, foci, n * sizeof *foci);
    record(app, w, RECORD_FOCI, body, 8 + n * sizeof *foci);
    return true;
}

void app__journal_commit(app_server* app, app_world* w) {
    if (w->jlen == 0 || app->cfg.state_dir == NULL) {
        w->jlen = 0;
        return;
    }
    if (w->journal_failed) {
        return; // kept for app__journal_retry()
    }
    if (w->journal_fd < 0) {
        go_down(app, w, true,
                "it has no journal open"); // (made without app__persist_world_created())
        return;
    }
    char why[200];
    if (!files_intact(app, w, w->journal_bytes, true, why, sizeof why)) {
        go_down(app, w, true, why); // deleted, replaced, cut: found before its replies go
        return;
    }
    if (!write_all(w->journal_fd, w->jbuf, w->jlen)) {
        char msg[160];
        snprintf(msg, sizeof msg, "writing its journal: %s", strerror(errno));
        go_down(app, w, false, msg);
        return;
    }
    w->journal_bytes += w->jlen;
    w->jlen = 0;
    w->journal_dirty = true;
    if (app->cfg.journal_fsync == APP_FSYNC_ALWAYS) {
        w->journal_dirty = false;
        if (fdatasync(w->journal_fd) != 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "fsync of its journal: %s", strerror(errno));
            go_down(app, w, true, msg);
        }
    }
}

// ---------------------------------------------------------------------------
// fsync once a second
// ---------------------------------------------------------------------------

typedef struct sync_job {
    uv_work_t req;
    app_server* app;
    uint32_t n;
    struct {
        int fd;      // a dup() of the journal, closed when synced
        uint64_t id; // its world's
        int err;     // fdatasync()'s errno, 0 when it succeeded
    } j[];
} sync_job;

static void sync_work(uv_work_t* req) {
    sync_job* j = req->data;
    for (uint32_t i = 0; i < j->n; ++i) {
        j->j[i].err = fdatasync(j->j[i].fd) == 0 ? 0 : errno;
        close(j->j[i].fd);
    }
}

static void sync_done(uv_work_t* req, int status) {
    (void)status;
    sync_job* j = req->data;
    app_server* app = j->app;
    for (uint32_t i = 0; i < j->n; ++i) {
        app_world* w = j->j[i].err != 0 ? app__world_find(app, j->j[i].id) : NULL;
        if (w != NULL) {
            // What the kernel failed to write may be gone from its cache:
            // only a state file is sure to hold it.
            char msg[160];
            snprintf(msg, sizeof msg, "fsync of its journal: %s", strerror(j->j[i].err));
            go_down(app, w, true, msg);
        }
    }
    free(j);
    if (--app->syncs_in_flight == 0 && app->saves_in_flight == 0 && app->persist_done != NULL) {
        app__persist_shutdown(app, app->persist_done);
    }
}

void app__journal_sync_due(app_server* app, uint64_t now) {
    if (app->cfg.state_dir == NULL || app->cfg.journal_fsync != APP_FSYNC_EVERYSEC ||
        now < app->next_sync_ns || app->syncs_in_flight > 0) {
        return;
    }
    app->next_sync_ns = now + 1000000000ull;
    sync_job* j = calloc(1, sizeof *j + app->cfg.max_worlds * sizeof j->j[0]);
    if (j == NULL) {
        return;
    }
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w != NULL && w->journal_dirty && w->journal_fd >= 0) {
            int fd = dup(w->journal_fd); // the world may close its own meanwhile
            if (fd >= 0) {
                j->j[j->n].fd = fd;
                j->j[j->n].id = w->id;
                j->n++;
                w->journal_dirty = false;
            }
        }
    }
    if (j->n == 0) {
        free(j);
        return;
    }
    j->app = app;
    j->req.data = j;
    app->syncs_in_flight++;
    if (uv_queue_work(app->loop, &j->req, sync_work, sync_done) != 0) {
        sync_work(&j->req);
        sync_done(&j->req, 0);
    }
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

void app__journal_close(app_world* w) {
    if (w->journal_fd >= 0) {
        close(w->journal_fd);
        w->journal_fd = -1;
    }
}

void app__journal_open(app_server* app, app_world* w) {
    if (app->cfg.state_dir == NULL || w->journal_fd >= 0 || w->journal_lost) {
        return; // none, open, or none until a state file lands
    }
    char path[4096], msg[4400];
    journal_path(app, w->id, path, sizeof path);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(msg, sizeof msg, "cannot open %s: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        go_down(app, w, true, msg);
        return;
    }
    w->journal_bytes = (uint64_t)st.st_size;
    if (st.st_size == 0) {
        uint8_t head[JOURNAL_HEAD];
        head_bytes(head, w->id, w->seq);
        if (!write_all(fd, head, sizeof head) || fsync(fd) != 0) {
            snprintf(msg, sizeof msg, "cannot write the head of %s: %s", path, strerror(errno));
            close(fd);
            go_down(app, w, true, msg);
            return;
        }
        w->journal_bytes = JOURNAL_HEAD;
    }
    w->journal_fd = fd;
}

void app__journal_remove(app_server* app, app_world* w) {
    app__journal_close(w);
    if (app->cfg.state_dir != NULL) {
        char path[4096];
        journal_path(app, w->id, path, sizeof path);
        unlink(path);
    }
}

// Replaces w's journal by a fresh head (following the state of sequence
// `seq`) and `tail` (n bytes of records after it), written to a temporary
// file, fsync'd and renamed over, so a crash leaves the old journal (whose
// extra records a replay skips by sequence) or the new one. Returns 0.
static int rewrite(app_server* app, app_world* w, uint64_t seq, const uint8_t* tail, size_t n) {
    char name[64], why[256];
    app__journal_name(w->id, name, sizeof name);
    uint8_t* fresh = malloc(JOURNAL_HEAD + n + 1);
    if (fresh == NULL) {
        return -1;
    }
    head_bytes(fresh, w->id, seq);
    if (n > 0) {
        memcpy(fresh + JOURNAL_HEAD, tail, n);
    }
    int rc =
        app__file_write_atomic(app->cfg.state_dir, name, fresh, JOURNAL_HEAD + n, why, sizeof why);
    free(fresh);
    if (rc != 0) {
        if (w->journal_fd < 0) {
            go_down(app, w, true, why); // no journal at all: down until one is written
        } else {
            say(app, APP_LOG_WARN, "journal_not_compacted", w->id, why);
        }
        return -1;
    }
    app__journal_close(w); // the name now holds the new file: reopen it
    w->journal_failed = false;
    w->journal_lost = false;
    app__journal_open(app, w);
    return w->journal_fd >= 0 ? 0 : -1; // else down again, said by app__journal_open()
}

void app__journal_compact(app_server* app, app_world* w, uint64_t from, uint64_t seq) {
    if (app->cfg.state_dir == NULL) {
        return;
    }
    if (from == APP_JOURNAL_ALL) {
        // The state holds everything, also what waited to be written: a
        // journal from it on (how a journal that failed comes back).
        w->jlen = 0;
        if (rewrite(app, w, seq, NULL, 0) == 0) {
            w->journal_dirty = false;
        }
        return;
    }
    if (w->journal_failed || w->journal_fd < 0 || from < JOURNAL_HEAD || from > w->journal_bytes) {
        return; // a replay skips what the state holds
    }
    char path[4096], why[256];
    journal_path(app, w->id, path, sizeof path);
    uint8_t* old = NULL;
    size_t len = 0;
    if (app__file_read(path, &old, &len, why, sizeof why) != 0 || len != w->journal_bytes) {
        free(old);
        return; // leave it whole: a replay skips what the state holds
    }
    rewrite(app, w, seq, old + from, len - (size_t)from);
    free(old);
}

// ---------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------

// Whether a whole record with a good CRC starts at byte `at` of p (len
// bytes); its length after the length and CRC fields in *rlen.
static bool record_ok(const uint8_t* p, size_t len, size_t at, uint32_t* rlen) {
    uint32_t n = 0, crc = 0;
    if (len - at < 8) {
        return false;
    }
    memcpy(&n, p + at, 4);
    memcpy(&crc, p + at + 4, 4);
    if (n < RECORD_HEAD - 8 || n > RECORD_MAX || n > len - at - 8 ||
        app__crc32(p + at + 8, n) != crc) {
        return false;
    }
    *rlen = n;
    return true;
}

// What a first pass over the journal found.
typedef struct scan {
    size_t good_end; ///< Where the last good record ends.
    bool damaged;    ///< A bad record with good ones after it: not a torn tail.
    uint64_t* drops; ///< The commands rollbacks undid.
    size_t n_drops;
} scan;

// Checks the whole journal before anything applies to w: its head is this
// build's and w's, it follows w's state (or an older one), its commands
// come one after the other and its ticks never go back. Returns 0, or -1
// with why.
static int scan_journal(const uint8_t* p, size_t len, const char* path, const app_world* w,
                        scan* sc, char* why, size_t cap) {
    memset(sc, 0, sizeof *sc);
    uint8_t head[JOURNAL_HEAD];
    head_bytes(head, 0, 0);
    if (len < JOURNAL_HEAD || memcmp(p, head, 16) != 0) {
        snprintf(why, cap, "%s is not a journal of this build (magic, version or command size)",
                 path);
        return -1;
    }
    uint64_t world = 0, base = 0;
    memcpy(&world, p + 16, 8);
    memcpy(&base, p + 24, 8);
    if (world != w->id) {
        snprintf(why, cap, "%s is the journal of world %" PRIu64 ", not of world %" PRIu64, path,
                 world, w->id);
        return -1;
    }
    if (base > w->seq) {
        snprintf(why, cap,
                 "%s follows the state of command %" PRIu64 "; this state holds %" PRIu64
                 " commands: those between are missing",
                 path, base, w->seq);
        return -1;
    }
    uint64_t last_seq = base, last_tick = 0;
    size_t at = JOURNAL_HEAD;
    uint32_t rlen = 0;
    while (at < len && record_ok(p, len, at, &rlen)) {
        uint32_t type = 0;
        uint64_t seq = 0, tick = 0;
        memcpy(&type, p + at + 8, 4);
        memcpy(&seq, p + at + 16, 8);
        memcpy(&tick, p + at + 24, 8);
        if ((type == RECORD_COMMAND && seq != last_seq + 1) || tick < last_tick) {
            snprintf(why, cap,
                     "%s: the record at byte %zu (command %" PRIu64 ", tick %" PRIu64
                     ") does not follow command %" PRIu64 " at tick %" PRIu64,
                     path, at, seq, tick, last_seq, last_tick);
            free(sc->drops);
            sc->drops = NULL;
            return -1;
        }
        if (type == RECORD_COMMAND) {
            last_seq = seq;
        }
        last_tick = tick;
        if (type == RECORD_DROP && rlen == RECORD_HEAD - 8 + 8) {
            uint64_t* d = realloc(sc->drops, (sc->n_drops + 1) * sizeof *sc->drops);
            if (d != NULL) {
                sc->drops = d;
                memcpy(&sc->drops[sc->n_drops++], p + at + RECORD_HEAD, 8);
            }
        }
        at += 8 + (size_t)rlen;
    }
    sc->good_end = at;
    // A torn tail is a crash mid-write: nothing good comes after it, and it
    // is shorter than one write. A good record further on, or a tail longer
    // than any write, means damage.
    sc->damaged = len - at > TORN_MAX;
    for (size_t k = at + 1; k + RECORD_HEAD <= len && !sc->damaged; ++k) {
        sc->damaged = record_ok(p, len, k, &rlen);
    }
    return 0;
}

// Steps w to `tick`, printing each tick's hash to `hashes` (NULL: none).
static void step_to(app_world* w, uint64_t tick, FILE* hashes) {
    while (sim_world_tick(w->sim) < tick) {
        sim_world_step(w->sim);
        // Drained as the live server drains them (nothing the step reads).
        sim_world_drain_torn(w->sim, NULL, 0, NULL);
        sim_world_drain_impacts(w->sim, NULL, 0, NULL);
        sim_world_drain_limit_hits(w->sim, NULL, 0, NULL);
        sim_event ev[64];
        while (sim_world_drain_events(w->sim, ev, 64) > 0) {
        }
        if (hashes != NULL) {
            fprintf(hashes, "%" PRIu64 " %016" PRIx64 "\n", sim_world_tick(w->sim),
                    sim_world_hash(w->sim));
        }
    }
}

// Applies one command record (sequence w->seq + 1) to w. Returns 0, or -1
// with why when the world refused it (the replay diverged).
static int apply_command(app_server* app, app_world* w, const uint8_t* body, uint64_t seq,
                         uint64_t tick, char* why, size_t cap) {
    app_cmd e;
    memset(&e, 0, sizeof e);
    uint32_t role;
    memcpy(&role, body, 4);
    memcpy(&e.owner, body + 8, 8);
    memcpy(&e.cmd, body + 16, sizeof e.cmd);
    e.role = role <= APP_ROLE_ADMIN ? (app_role)role : APP_ROLE_NONE;
    w->apply_role = e.role;
    w->apply_owner = e.owner;
    size_t rl = 0, el = 0;
    char* ev = NULL;
    char* reply = app__apply(app, w, NULL, &e.cmd, &rl, &ev, &el);
    rdp_free(reply);
    rdp_free(ev);
    if (!w->apply_changed) {
        snprintf(why, cap,
                 "command %" PRIu64 " (%s) at tick %" PRIu64
                 " was refused in the replay: the replay diverged",
                 seq, rdp_op_name(e.cmd.op), tick);
        return -1;
    }
    w->seq = seq;
    return 0;
}

int app__journal_replay(app_server* app, app_world* w, const char* path, uint64_t until,
                        FILE* hashes, app_replay_stats* stats, char* why, size_t cap) {
    memset(stats, 0, sizeof *stats);
    why[0] = '\0';
    uint8_t* p = NULL;
    size_t len = 0;
    if (app__file_read(path, &p, &len, why, cap) != 0) {
        if (errno == ENOENT) {
            why[0] = '\0';
            return 0; // no journal: nothing happened since the state
        }
        return -1;
    }
    scan sc;
    if (scan_journal(p, len, path, w, &sc, why, cap) != 0) {
        free(p);
        return -1; // nothing applied
    }
    stats->good_end = sc.good_end;
    stats->damaged = sc.damaged;
    stats->bad_bytes = len - sc.good_end;
    const uint64_t base_seq = w->seq;
    const uint32_t inbox_had = w->inbox_count;
    int rc = 0;
    uint32_t rlen = 0;
    for (size_t at = JOURNAL_HEAD; at < sc.good_end; at += 8 + (size_t)rlen) {
        record_ok(p, len, at, &rlen);
        uint32_t type = 0;
        uint64_t seq = 0, tick = 0;
        memcpy(&type, p + at + 8, 4);
        memcpy(&seq, p + at + 16, 8);
        memcpy(&tick, p + at + 24, 8);
        const uint8_t* body = p + at + RECORD_HEAD;
        const size_t blen = rlen - (RECORD_HEAD - 8);
        if (tick > until) {
            stats->stopped_at_until = true;
            break;
        }
        const uint64_t now = sim_world_tick(w->sim);
        if (type == RECORD_COMMAND && blen == COMMAND_BODY) {
            bool dropped = false;
            for (size_t d = 0; d < sc.n_drops; ++d) {
                dropped |= sc.drops[d] == seq;
            }
            if (seq <= w->seq) {
                // In the state already.
            } else if (dropped) {
                w->seq = seq; // undone by a rollback: as if it never came
            } else if (tick < now) {
                snprintf(why, cap,
                         "command %" PRIu64 " at tick %" PRIu64
                         " is before the state's tick %" PRIu64,
                         seq, tick, now);
                rc = -1;
                break;
            } else {
                step_to(w, tick, hashes);
                if (apply_command(app, w, body, seq, tick, why, cap) != 0) {
                    rc = -1;
                    break;
                }
                stats->commands++;
            }
        } else if (type == RECORD_MARK && tick >= now) {
            step_to(w, tick, hashes);
        } else if (type == RECORD_FOCI && blen >= 8) {
            uint32_t n = 0;
            memcpy(&n, body, 4);
            if (n <= SIM_MAX_FOCI && blen == 8 + n * sizeof(sim_vec3) && tick >= now) {
                step_to(w, tick, hashes);
                sim_vec3 foci[SIM_MAX_FOCI];
                memcpy(foci, body + 8, n * sizeof(sim_vec3));
                sim_world_set_foci(w->sim, foci, n);
                memcpy(w->jfoci, foci, n * sizeof *foci);
                w->jfoci_count = n;
                stats->foci++;
            }
        }
    }
    stats->last_tick = sim_world_tick(w->sim);
    free(p);
    free(sc.drops);
    // The commands the state had queued are the journal's first ones, when
    // the journal got that far: drop those it applied.
    const uint64_t applied = w->seq - base_seq;
    const uint32_t drop = applied < inbox_had ? (uint32_t)applied : inbox_had;
    w->inbox_head = (w->inbox_head + drop) % w->inbox_cap;
    w->inbox_count -= drop;
    return rc;
}
