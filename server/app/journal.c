/*
 * journal.c: each world's journal of what changed it (docs/STATE.md), Redis's
 * append-only file beside the state file: world-ID.journal.
 *
 *   head     magic "RDJOURNL", version, size of a command        16 bytes
 *   record   length, CRC-32 of what follows, type, sequence, tick, body
 *            command: the sender's role and owner key, the decoded command
 *            foci:    the points viewers look at (level of detail)
 *            mark:    nothing: the world reached this tick (once a second)
 *            drop:    a command's sequence: a rollback undid it (rollback.c),
 *                     so a replay skips it (found in a first pass)
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
 * The state file records the sequence it holds (app_state.seq): a replay
 * (at start, or ragdolld --replay) loads it and applies the records after
 * it, stepping the world to each record's tick. A torn last record (a
 * crash mid-write) ends the replay there and is cut off; anything after
 * the first bad record is never applied. When a state file lands, the
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

#define JOURNAL_HEAD    16u
#define RECORD_HEAD     32u /* length, crc, type + pad, seq, tick */
#define RECORD_COMMAND  1u
#define RECORD_FOCI     2u
#define RECORD_MARK     3u /* no body: the world reached this tick */
#define RECORD_DROP     4u /* body: the sequence of a command a rollback undid */
#define JOURNAL_VERSION 1u

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

static void head_bytes(uint8_t out[JOURNAL_HEAD]) {
    const uint32_t version = JOURNAL_VERSION, cmd = (uint32_t)sizeof(rdp_command);
    memcpy(out, k_magic, 8);
    memcpy(out + 8, &version, 4);
    memcpy(out + 12, &cmd, 4);
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
    if (w->journal_fd < 0 || w->journal_failed) {
        return;
    }
    uint8_t* r = room(w, RECORD_HEAD + n);
    if (r == NULL) {
        w->journal_failed = true;
        say(app, APP_LOG_ERROR, "journal_failed", w->id, "out of memory");
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
    uint8_t body[16 + sizeof(rdp_command)];
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
    uint8_t body[8 + SIM_MAX_FOCI * sizeof(sim_vec3)];
    const uint32_t pad = 0;
    memcpy(body, &n, 4);
    memcpy(body + 4, &pad, 4);
    memcpy(body + 8, foci, n * sizeof *foci);
    record(app, w, RECORD_FOCI, body, 8 + n * sizeof *foci);
    return true;
}

// write() all of it; false (errno set) on an error.
static bool write_all(int fd, const uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return false;
        }
        p += k;
        n -= (size_t)k;
    }
    return true;
}

void app__journal_commit(app_server* app, app_world* w) {
    if (w->jlen == 0) {
        return;
    }
    if (w->journal_fd >= 0 && !w->journal_failed) {
        if (!write_all(w->journal_fd, w->jbuf, w->jlen)) {
            w->journal_failed = true;
            char msg[160];
            snprintf(msg, sizeof msg, "write: %s; commands are no longer journaled",
                     strerror(errno));
            say(app, APP_LOG_ERROR, "journal_failed", w->id, msg);
        } else {
            w->journal_bytes += w->jlen;
            w->journal_dirty = true;
            if (app->cfg.journal_fsync == APP_FSYNC_ALWAYS) {
                fdatasync(w->journal_fd);
                w->journal_dirty = false;
            }
        }
    }
    w->jlen = 0;
}

// ---------------------------------------------------------------------------
// fsync once a second
// ---------------------------------------------------------------------------

typedef struct sync_job {
    uv_work_t req;
    app_server* app;
    uint32_t n;
    int fds[]; // dup()s of the journals, closed when synced
} sync_job;

static void sync_work(uv_work_t* req) {
    sync_job* j = req->data;
    for (uint32_t i = 0; i < j->n; ++i) {
        fdatasync(j->fds[i]);
        close(j->fds[i]);
    }
}

static void sync_done(uv_work_t* req, int status) {
    (void)status;
    sync_job* j = req->data;
    app_server* app = j->app;
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
    sync_job* j = calloc(1, sizeof *j + app->cfg.max_worlds * sizeof(int));
    if (j == NULL) {
        return;
    }
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w != NULL && w->journal_dirty && w->journal_fd >= 0) {
            int fd = dup(w->journal_fd); // the world may close its own meanwhile
            if (fd >= 0) {
                j->fds[j->n++] = fd;
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
    if (uv_queue_work(app->loop, &j->req, sync_work, sync_done) != 0) {
        sync_work(&j->req);
        free(j);
        return;
    }
    app->syncs_in_flight++;
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

// Opens (making it, with its head, when missing or empty) w's journal for
// appending.
void app__journal_open(app_server* app, app_world* w) {
    if (app->cfg.state_dir == NULL || w->journal_fd >= 0) {
        return;
    }
    char path[4096];
    journal_path(app, w->id, path, sizeof path);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        char msg[4400];
        snprintf(msg, sizeof msg, "cannot open %s: %s", path, strerror(errno));
        say(app, APP_LOG_ERROR, "journal_failed", w->id, msg);
        if (fd >= 0) {
            close(fd);
        }
        return;
    }
    w->journal_bytes = (uint64_t)st.st_size;
    if (st.st_size == 0) {
        uint8_t head[JOURNAL_HEAD];
        head_bytes(head);
        if (!write_all(fd, head, sizeof head)) {
            close(fd);
            say(app, APP_LOG_ERROR, "journal_failed", w->id, "cannot write the journal's head");
            return;
        }
        w->journal_bytes = JOURNAL_HEAD;
        fsync(fd);
    }
    w->journal_fd = fd;
    w->journal_failed = false;
}

void app__journal_remove(app_server* app, app_world* w) {
    app__journal_close(w);
    if (app->cfg.state_dir != NULL) {
        char path[4096];
        journal_path(app, w->id, path, sizeof path);
        unlink(path);
    }
}

// Rewrites w's journal keeping what is from byte `from` on (the records
// after the state file that just landed), with a fresh head: written to a
// temporary file, fsync'd and renamed over, so a crash leaves the old
// journal (whose extra records a replay skips by sequence) or the new one.
void app__journal_compact(app_server* app, app_world* w, uint64_t from) {
    if (app->cfg.state_dir == NULL || w->journal_fd < 0 || w->journal_failed ||
        from > w->journal_bytes || from < JOURNAL_HEAD) {
        return;
    }
    char path[4096], name[64];
    journal_path(app, w->id, path, sizeof path);
    app__journal_name(w->id, name, sizeof name);
    uint8_t* old = NULL;
    size_t len = 0;
    char why[256];
    if (app__file_read(path, &old, &len, why, sizeof why) != 0 || len != w->journal_bytes) {
        free(old);
        return; // leave it whole: a replay skips what the state holds
    }
    const size_t keep = len - (size_t)from;
    uint8_t* fresh = malloc(JOURNAL_HEAD + keep + 1);
    if (fresh == NULL) {
        free(old);
        return;
    }
    head_bytes(fresh);
    memcpy(fresh + JOURNAL_HEAD, old + from, keep);
    free(old);
    int rc = app__file_write_atomic(app->cfg.state_dir, name, fresh, JOURNAL_HEAD + keep, why,
                                    sizeof why);
    free(fresh);
    if (rc != 0) {
        say(app, APP_LOG_WARN, "journal_not_compacted", w->id, why);
        return;
    }
    app__journal_close(w); // the name now holds the new file: reopen it
    app__journal_open(app, w);
}

// ---------------------------------------------------------------------------
// Replay
// ---------------------------------------------------------------------------

// Steps w to `tick`, printing each tick's hash to `hashes` (NULL: none).
static void step_to(app_world* w, uint64_t tick, FILE* hashes) {
    while (sim_world_tick(w->sim) < tick) {
        sim_world_step(w->sim);
        // Drained as the live server drains them (nothing the step reads).
        sim_world_drain_torn(w->sim, NULL, 0, NULL);
        sim_event ev[64];
        while (sim_world_drain_events(w->sim, ev, 64) > 0) {
        }
        if (hashes != NULL) {
            fprintf(hashes, "%" PRIu64 " %016" PRIx64 "\n", sim_world_tick(w->sim),
                    sim_world_hash(w->sim));
        }
    }
}

int app__journal_replay(app_server* app, app_world* w, const char* path, uint64_t until,
                        FILE* hashes, bool cut_torn, app_replay_stats* stats, char* why,
                        size_t cap) {
    memset(stats, 0, sizeof *stats);
    uint8_t* p = NULL;
    size_t len = 0;
    if (app__file_read(path, &p, &len, why, cap) != 0) {
        if (errno == ENOENT) {
            why[0] = '\0';
            return 0; // no journal: nothing happened since the state
        }
        return -1;
    }
    uint8_t head[JOURNAL_HEAD];
    head_bytes(head);
    if (len < JOURNAL_HEAD || memcmp(p, head, JOURNAL_HEAD) != 0) {
        free(p);
        snprintf(why, cap, "%s is not a journal of this build (magic, version or command size)",
                 path);
        return -1;
    }
    const uint64_t base_seq = w->seq;
    const uint32_t inbox_had = w->inbox_count;
    // First pass: the commands rollbacks undid (a drop record comes after
    // the command it undoes).
    uint64_t* drops = NULL;
    size_t n_drops = 0;
    for (size_t at = JOURNAL_HEAD; len - at >= 8;) {
        uint32_t rlen = 0, crc = 0, type = 0;
        memcpy(&rlen, p + at, 4);
        memcpy(&crc, p + at + 4, 4);
        if (rlen < RECORD_HEAD - 8 || rlen > len - at - 8 || app__crc32(p + at + 8, rlen) != crc) {
            break;
        }
        memcpy(&type, p + at + 8, 4);
        if (type == RECORD_DROP && rlen == RECORD_HEAD - 8 + 8) {
            uint64_t* d = realloc(drops, (n_drops + 1) * sizeof *drops);
            if (d != NULL) {
                drops = d;
                memcpy(&drops[n_drops++], p + at + RECORD_HEAD, 8);
            }
        }
        at += 8 + rlen;
    }
    size_t at = JOURNAL_HEAD, good_end = JOURNAL_HEAD;
    int rc = 0;
    while (at < len) {
        uint32_t rlen = 0, crc = 0, type = 0;
        uint64_t seq = 0, tick = 0;
        if (len - at < 8) {
            break;
        }
        memcpy(&rlen, p + at, 4);
        memcpy(&crc, p + at + 4, 4);
        if (rlen < RECORD_HEAD - 8 || rlen > len - at - 8 || app__crc32(p + at + 8, rlen) != crc) {
            break; // torn or damaged: the replay ends here
        }
        memcpy(&type, p + at + 8, 4);
        memcpy(&seq, p + at + 16, 8);
        memcpy(&tick, p + at + 24, 8);
        const uint8_t* body = p + at + RECORD_HEAD;
        const size_t blen = rlen - (RECORD_HEAD - 8);
        if (tick > until) {
            break;
        }
        const uint64_t now = sim_world_tick(w->sim);
        if (type == RECORD_COMMAND && blen == 16 + sizeof(rdp_command)) {
            bool dropped = false;
            for (size_t d = 0; d < n_drops; ++d) {
                dropped |= drops[d] == seq;
            }
            if (seq <= w->seq) {
                // In the state already.
            } else if (dropped && seq == w->seq + 1) {
                w->seq = seq; // undone by a rollback: as if it never came
            } else if (seq != w->seq + 1 || tick < now) {
                snprintf(why, cap,
                         "record %" PRIu64 " at tick %" PRIu64 " does not follow command %" PRIu64
                         " at tick %" PRIu64,
                         seq, tick, w->seq, now);
                rc = -1;
                break;
            } else {
                step_to(w, tick, hashes);
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
                    rc = -1;
                    break;
                }
                w->seq = seq;
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
        at += 8 + rlen;
        good_end = at;
    }
    stats->torn_bytes = len - good_end;
    stats->last_tick = sim_world_tick(w->sim);
    free(p);
    free(drops);
    // The commands the state had queued are the journal's first ones, when
    // the journal got that far: drop those it applied.
    const uint64_t applied = w->seq - base_seq;
    const uint32_t drop = applied < inbox_had ? (uint32_t)applied : inbox_had;
    w->inbox_head = (w->inbox_head + drop) % w->inbox_cap;
    w->inbox_count -= drop;
    if (rc == 0 && cut_torn && stats->torn_bytes > 0) {
        if (truncate(path, (off_t)good_end) != 0) {
            snprintf(why, cap, "cannot cut the torn tail: %s", strerror(errno));
            return -1;
        }
    }
    return rc;
}
