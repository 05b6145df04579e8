/*
 * persist.c: when worlds' state files are written and read (--state-dir).
 *
 * A world's state is encoded on the loop thread at one of its tick
 * boundaries (it is idle there: no worker has it), before that tick's
 * commands apply, so the file holds tick T and the commands queued for it.
 * The bytes are then written atomically (state_file.c) on libuv's
 * threadpool, Redis's BGSAVE without the fork: the world ticks on while
 * its file is written. One write per world is in flight at a time; an
 * autosave that falls due meanwhile waits for the next boundary.
 *
 *   made (create_world, the demo)   written at once, blocking (it is small)
 *   every --autosave seconds        at a tick boundary, on the threadpool
 *   save_world                      the same, and the asker answered when durable
 *   SIGINT/SIGTERM                  after the workers stop: in-flight writes
 *                                   land, then every world is written, blocking
 *   destroy_world                   its files removed
 *
 * At start every world-ID.state in the directory is loaded; a file that is
 * refused is logged with its reason and kept (for the operator to look at),
 * and the rest load. The journal of each world (journal.c) brings it from
 * its state file's tick to the last command written before the stop.
 */
#include "persist.h"

#include "report.h"

#include <nettle/base64.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/// A state file being written on the threadpool.
struct app_save {
    uv_work_t req;
    app_server* app;
    app_world* world; ///< NULL once it was destroyed (the file is removed when it lands).
    uint64_t id, tick;
    uint8_t* buf;
    size_t len;
    int rc;
    char why[256];
    uint64_t encode_ns, write_ns;
    uint64_t journal_from; ///< The journal's length when encoded: what follows is kept.
    uint64_t seq;          ///< The world's command sequence when encoded.
    bool removed;          ///< destroy_world removed its files: removed again when it lands.
    struct {
        app_client* client;
        rdp_re re;
        bool fetch;
    } waiters[APP_MAX_SAVE_WAITERS];
    uint32_t waiter_count;
};

void app__state_name(uint64_t id, char* buf, size_t cap) {
    snprintf(buf, cap, "world-%" PRIu64 ".state", id);
}

// One log line about a state file.
static void say(app_server* app, app_log_level level, const char* event, uint64_t world,
                const char* file, const char* reason, uint64_t bytes, uint64_t tick, double ms) {
    app_log_line l;
    if (!app__log_begin(&app->log, &l, level, APP_LOGK_ALWAYS, event, uv_hrtime())) {
        return;
    }
    if (world != 0) {
        app__log_u64(&l, "world", world);
    }
    app__log_str(&l, "file", file);
    if (reason != NULL) {
        app__log_str(&l, "reason", reason);
    }
    if (bytes != 0) {
        app__log_u64(&l, "bytes", bytes);
        app__log_u64(&l, "tick", tick);
        app__log_f64(&l, "ms", ms);
    }
    app__log_end(&l);
}

// The state file w's server wrote last (app__journal_commit() checks it is
// still that one: not emptied, overwritten or replaced in place).
static void remember_state_file(app_world* w, const char* path) {
    struct stat st;
    if (stat(path, &st) == 0) {
        w->state_dev = (uint64_t)st.st_dev;
        w->state_ino = (uint64_t)st.st_ino;
        w->state_size = (uint64_t)st.st_size;
    }
}

static void next_due(app_server* app, app_world* w) {
    w->next_save_ns = uv_hrtime() + (uint64_t)app->cfg.autosave_s * 1000000000ull;
}

// ---------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------

static void answer(app_server* app, app_client* c, rdp_re re, bool fetch, const app_save* s,
                   const char* path) {
    if (c == NULL) {
        return;
    }
    size_t len = 0;
    char* text = NULL;
    if (s->world == NULL) {
        char msg[160];
        snprintf(msg, sizeof msg,
                 "world %" PRIu64 " was destroyed while its state was written (the file is gone)",
                 s->id);
        text = rdp_reply_error(re, RDP_E_NOT_FOUND, msg, &len);
    } else if (s->rc == 0) {
        rdp_reply_fields f;
        memset(&f, 0, sizeof f);
        f.has_tick = true;
        f.tick = s->tick;
        f.has_world = true;
        f.world = s->id;
        f.has_bytes = true;
        f.bytes = s->len;
        f.file = path;
        char* b64 = NULL;
        if (fetch) {
            b64 = malloc(BASE64_ENCODE_RAW_LENGTH(s->len) + 1);
            if (b64 != NULL) {
                base64_encode_raw(b64, s->len, s->buf);
                b64[BASE64_ENCODE_RAW_LENGTH(s->len)] = '\0';
            }
            f.state = b64;
        }
        text = b64 != NULL || !fetch ? rdp_reply_ok(re, &f, &len)
                                     : rdp_reply_error(re, RDP_E_INTERNAL, "out of memory", &len);
        free(b64);
    } else {
        char msg[400];
        snprintf(msg, sizeof msg, "the state of world %" PRIu64 " was not saved: %s", s->id,
                 s->why);
        text = rdp_reply_error(re, RDP_E_UNAVAILABLE, msg, &len);
    }
    app__report_reply(app, c, RDP_OP_SAVE_WORLD, text, len);
    app__send(c, text, len);
}

// ---------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------

static void write_work(uv_work_t* req) {
    app_save* s = req->data;
    char name[64];
    app__state_name(s->id, name, sizeof name);
    uint64_t t0 = uv_hrtime();
    s->rc =
        app__file_write_atomic(s->app->cfg.state_dir, name, s->buf, s->len, s->why, sizeof s->why);
    s->write_ns = uv_hrtime() - t0;
}

static void write_done(uv_work_t* req, int status) {
    app_save* s = req->data;
    app_server* app = s->app;
    char name[64], path[4096];
    app__state_name(s->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
    if (status != 0 && s->rc == 0) {
        s->rc = -1;
        snprintf(s->why, sizeof s->why, "%s", uv_strerror(status));
    }
    if (s->rc == 0) {
        app->saves++;
        say(app, APP_LOG_DEBUG, "world_saved", s->id, path, NULL, s->len, s->tick,
            (double)(s->encode_ns + s->write_ns) / 1e6);
    } else {
        app->save_failures++;
        say(app, APP_LOG_ERROR, "save_failed", s->id, path, s->why, 0, 0, 0);
    }
    if (s->world != NULL) {
        s->world->saving = NULL;
        if (s->rc == 0) {
            remember_state_file(s->world, path);
            app__journal_compact(app, s->world, s->journal_from, s->seq);
        }
    } else if (s->rc == 0 && s->removed) {
        unlink(path); // destroyed while it was written
    }
    for (uint32_t i = 0; i < s->waiter_count; ++i) {
        answer(app, s->waiters[i].client, s->waiters[i].re, s->waiters[i].fetch, s, path);
    }
    free(s->buf);
    free(s);
    if (--app->saves_in_flight == 0 && app->syncs_in_flight == 0 && app->persist_done != NULL) {
        app__persist_shutdown(app, app->persist_done); // the last one landed: now the final saves
    }
}

// Encodes w (idle, at a tick boundary) and hands the write to the
// threadpool; the world's waiters go with it.
static void save_async(app_server* app, app_world* w) {
    app_save* s = calloc(1, sizeof *s);
    uint64_t t0 = uv_hrtime();
    if (s == NULL || app__state_encode(w, &s->buf, &s->len) != 0) {
        free(s);
        app->save_failures++;
        char name[64], path[4096];
        app__state_name(w->id, name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
        say(app, APP_LOG_ERROR, "save_failed", w->id, path, "out of memory", 0, 0, 0);
        return;
    }
    s->encode_ns = uv_hrtime() - t0;
    s->app = app;
    s->world = w;
    s->id = w->id;
    s->tick = sim_world_tick(w->sim);
    s->journal_from = w->journal_bytes;
    s->seq = w->seq;
    s->req.data = s;
    for (uint32_t i = 0; i < w->save_waiter_count; ++i) {
        s->waiters[i].client = w->save_waiters[i].client;
        s->waiters[i].re = w->save_waiters[i].re;
        s->waiters[i].fetch = w->save_waiters[i].fetch;
    }
    s->waiter_count = w->save_waiter_count;
    w->save_waiter_count = 0;
    w->save_wanted = false;
    int rc = uv_queue_work(app->loop, &s->req, write_work, write_done);
    if (rc != 0) {
        s->rc = -1;
        snprintf(s->why, sizeof s->why, "cannot queue the write: %s", uv_strerror(rc));
        app->saves_in_flight++;
        w->saving = s;
        write_done(&s->req, 0);
        return;
    }
    app->saves_in_flight++;
    w->saving = s;
}

int app__persist_save_now(app_server* app, app_world* w, char* why, size_t cap) {
    uint8_t* buf = NULL;
    size_t len = 0;
    char name[64], path[4096], reason[256] = "out of memory";
    app__state_name(w->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
    uint64_t t0 = uv_hrtime();
    int rc = app__state_encode(w, &buf, &len);
    if (rc == 0) {
        rc = app__file_write_atomic(app->cfg.state_dir, name, buf, len, reason, sizeof reason);
    }
    free(buf);
    if (rc != 0) {
        app->save_failures++;
        say(app, APP_LOG_ERROR, "save_failed", w->id, path, reason, 0, 0, 0);
        if (why != NULL) {
            snprintf(why, cap, "%s", reason);
        }
        return -1;
    }
    app->saves++;
    remember_state_file(w, path);
    say(app, APP_LOG_DEBUG, "world_saved", w->id, path, NULL, len, sim_world_tick(w->sim),
        (double)(uv_hrtime() - t0) / 1e6);
    app__journal_compact(app, w, APP_JOURNAL_ALL, w->seq); // the state holds all of it
    return 0;
}

// ---------------------------------------------------------------------------
// The server's side
// ---------------------------------------------------------------------------

// w's files do not hold it and could not be written: its commands are
// refused until a state file lands (app__journal_retry()), and it has no
// journal until then (one would follow a state that is not on the disk).
static void down_until_saved(app_server* app, app_world* w, const char* why) {
    app__journal_close(w);
    snprintf(w->journal_why, sizeof w->journal_why, "its state file: %s", why);
    if (!w->journal_failed) {
        app->journal_failures++;
        app_log_line l;
        if (app__log_begin(&app->log, &l, APP_LOG_ERROR, APP_LOGK_ALWAYS, "journal_failed",
                           uv_hrtime())) {
            app__log_u64(&l, "world", w->id);
            app__log_str(&l, "reason", w->journal_why);
            app__log_end(&l);
        }
    }
    w->journal_failed = true;
    w->journal_lost = true;
    w->jlen = 0;
    w->journal_retry_ns = w->journal_resave_ns = uv_hrtime() + 1000000000ull;
}

int app__persist_world_created(app_server* app, app_world* w, char* why, size_t cap) {
    next_due(app, w);
    if (app->cfg.state_dir == NULL) {
        return 0;
    }
    app__journal_remove(app, w); // a journal left by an older world of this id is not its
    w->journal_bytes = 0;
    if (app__persist_save_now(app, w, why, cap) != 0) {
        down_until_saved(app, w, why != NULL ? why : "not written");
        return -1;
    }
    return 0;
}

void app__persist_tick(app_server* app, app_world* w) {
    if (app->cfg.state_dir == NULL || w->saving != NULL || app__journal_down(app, w)) {
        return; // (a world whose journal is down is saved by app__journal_retry())
    }
    const bool due = app->cfg.autosave_s > 0 && uv_hrtime() >= w->next_save_ns;
    if (due || w->save_wanted) {
        next_due(app, w);
        save_async(app, w);
    }
}

void app__persist_request(app_server* app, app_world* w, app_client* c, const rdp_command* cmd) {
    if (app->cfg.state_dir == NULL) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_BAD_STATE,
                        "this server keeps no state files: start it with --state-dir DIR");
        return;
    }
    if (app__journal_down(app, w)) {
        char msg[320];
        snprintf(msg, sizeof msg,
                 "world %" PRIu64 " cannot be saved now (%s); the server writes it as soon as it "
                 "can",
                 w->id, w->journal_why);
        app__send_error(c, rdp_re_of(cmd), RDP_E_UNAVAILABLE, msg);
        return;
    }
    if (w->save_waiter_count == APP_MAX_SAVE_WAITERS) {
        app__send_error(c, rdp_re_of(cmd), RDP_E_RATE_LIMITED,
                        "this world has 8 saves asked for already; wait for their replies");
        return;
    }
    w->save_waiters[w->save_waiter_count].client = c;
    w->save_waiters[w->save_waiter_count].re = rdp_re_of(cmd);
    w->save_waiters[w->save_waiter_count].fetch = cmd->u.save_world.fetch != 0;
    w->save_waiter_count++;
    w->save_wanted = true;
    c->cmd_op = 0; // answered when the file lands, and counted then (answer())
    if (!w->busy && app->sched.running) {
        app__persist_tick(app, w); // idle: this is a tick boundary
    }
}

void app__persist_client_gone(app_server* app, app_client* c) {
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        app_world* w = app->worlds[i];
        if (w == NULL) {
            continue;
        }
        for (uint32_t k = 0; k < w->save_waiter_count; ++k) {
            if (w->save_waiters[k].client == c) {
                w->save_waiters[k].client = NULL;
            }
        }
        app_save* s = w->saving;
        for (uint32_t k = 0; s != NULL && k < s->waiter_count; ++k) {
            if (s->waiters[k].client == c) {
                s->waiters[k].client = NULL;
            }
        }
    }
}

void app__persist_remove_files(app_server* app, app_world* w) {
    if (app->cfg.state_dir == NULL) {
        return;
    }
    char name[64], path[4096];
    app__state_name(w->id, name, sizeof name);
    snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
    unlink(path);
    app__journal_remove(app, w);
    if (w->saving != NULL) {
        w->saving->world = NULL; // removed again when it lands
        w->saving->removed = true;
        w->saving = NULL;
    }
}

void app__persist_world_gone(app_server* app, app_world* w) {
    (void)app;
    if (w->saving != NULL) {
        w->saving->world = NULL;
        w->saving = NULL;
    }
    for (uint32_t k = 0; k < w->save_waiter_count; ++k) {
        if (w->save_waiters[k].client != NULL) {
            char msg[96];
            snprintf(msg, sizeof msg, "world %" PRIu64 " is gone", w->id);
            app__send_error(w->save_waiters[k].client, w->save_waiters[k].re, RDP_E_NOT_FOUND, msg);
        }
    }
    w->save_waiter_count = 0;
}

void app__persist_shutdown(app_server* app, void (*done)(app_server* app)) {
    if (app->cfg.state_dir == NULL) {
        done(app);
        return;
    }
    if (app->saves_in_flight > 0 || app->syncs_in_flight > 0) {
        app->persist_done = done; // the last write to land calls us again
        return;
    }
    app->persist_done = NULL;
    if (app->state_dir_taken) {
        say(app, APP_LOG_ERROR, "worlds_not_saved", 0, app->cfg.state_dir,
            "another server holds the state dir: nothing is written", 0, 0, 0);
        done(app);
        return;
    }
    uint32_t saved = 0, failed = 0;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] != NULL) {
            if (app__persist_save_now(app, app->worlds[i], NULL, 0) == 0) {
                saved++;
            } else {
                failed++;
            }
        }
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%u worlds saved, %u failed", saved, failed);
    say(app, failed > 0 ? APP_LOG_ERROR : APP_LOG_INFO, "worlds_saved", 0, app->cfg.state_dir, msg,
        0, 0, 0);
    done(app);
}

// ---------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------

int app__persist_lock(app_server* app, char* why, size_t cap) {
    if (app->cfg.state_dir == NULL) {
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/.lock", app->cfg.state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        snprintf(why, cap, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int err = errno;
        char pid[32] = "";
        ssize_t n = pread(fd, pid, sizeof pid - 1, 0);
        pid[n > 0 ? n : 0] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        close(fd);
        if (err == EWOULDBLOCK) {
            snprintf(why, cap,
                     "another ragdolld (pid %s) keeps its worlds in --state-dir %s: two servers "
                     "would overwrite each other's files",
                     pid[0] != '\0' ? pid : "unknown", app->cfg.state_dir);
        } else {
            snprintf(why, cap, "cannot lock %s: %s", path, strerror(err));
        }
        return -1;
    }
    char pid[32];
    int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
        // The lock holds without the pid: only the message is poorer.
    }
    app->state_lock_fd = fd;
    return 0;
}

void app__persist_check_lock(app_server* app, uint64_t now) {
    if (app->cfg.state_dir == NULL || now < app->lock_check_ns) {
        return;
    }
    app->lock_check_ns = now + 1000000000ull;
    char path[4096], why[512];
    snprintf(path, sizeof path, "%s/.lock", app->cfg.state_dir);
    struct stat held, there;
    if (app->state_lock_fd > 0 && fstat(app->state_lock_fd, &held) == 0 &&
        stat(path, &there) == 0 && held.st_ino == there.st_ino && held.st_dev == there.st_dev) {
        return; // still ours
    }
    // The directory was replaced, or its lock removed: take it again, or
    // stand down if another server has it now.
    const int old = app->state_lock_fd;
    app->state_lock_fd = 0;
    const bool ours = app__persist_lock(app, why, sizeof why) == 0;
    if (!ours) {
        app->state_lock_fd = old;
    } else if (old > 0) {
        close(old);
    }
    if (ours || !app->state_dir_taken) {
        say(app, ours ? APP_LOG_WARN : APP_LOG_ERROR,
            ours ? "state_dir_relocked" : "state_dir_lost", 0, path,
            ours ? "the state dir's lock was gone: taken again, every world written afresh" : why,
            0, 0, 0);
    }
    app->state_dir_taken = !ours;
    for (uint32_t i = 0; i < app->cfg.max_worlds; ++i) {
        if (app->worlds[i] != NULL) {
            app__journal_lose(app, app->worlds[i],
                              ours ? "the state dir was replaced under the server"
                                   : "another server holds the state dir");
        }
    }
}

void app__persist_unlock(app_server* app) {
    if (app->state_lock_fd > 0) {
        close(app->state_lock_fd); // the lock goes with it
        app->state_lock_fd = 0;
    }
}

// The id of a state file's name, exactly "world-ID.state" with ID a
// number from 1 to 2^53 - 1 (an id the protocol can name) in digits
// without a sign or a leading zero; else 0.
static uint64_t id_of(const char* name, const char* suffix) {
    if (strncmp(name, "world-", 6) != 0 || name[6] < '1' || name[6] > '9') {
        return 0;
    }
    uint64_t id = 0;
    bool over = false;
    const char* p = name + 6;
    for (; *p >= '0' && *p <= '9'; ++p) {
        const uint64_t d = (uint64_t)(*p - '0');
        over |= id > (APP_MAX_WORLD_ID - d) / 10; // id * 10 + d would pass the largest
        id = over ? id : id * 10 + d;
    }
    if (strcmp(p, suffix) != 0) {
        return 0;
    }
    return over || id > APP_MAX_WORLD_ID ? UINT64_MAX : id; // a state file's name, a bad id
}

// Appends id to the growing array *a (*n of *cap); false when out of memory.
static bool push_id(uint64_t** a, size_t* n, size_t* cap, uint64_t id) {
    if (*n == *cap) {
        size_t c = *cap == 0 ? 16 : 2 * *cap;
        uint64_t* p = realloc(*a, c * sizeof *p);
        if (p == NULL) {
            return false;
        }
        *a = p;
        *cap = c;
    }
    (*a)[(*n)++] = id;
    return true;
}

static int by_id(const void* a, const void* b) {
    uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
    return x < y ? -1 : x > y;
}

uint32_t app__persist_load_all(app_server* app) {
    if (app->cfg.state_dir == NULL) {
        return 0;
    }
    DIR* d = opendir(app->cfg.state_dir);
    if (d == NULL) {
        say(app, APP_LOG_ERROR, "state_dir_unreadable", 0, app->cfg.state_dir, strerror(errno), 0,
            0, 0);
        return 0;
    }
    uint64_t* ids = NULL;
    size_t n = 0, cap = 0;
    uint64_t* jids = NULL; // journals
    size_t nj = 0, jcap = 0;
    for (struct dirent* e = readdir(d); e != NULL; e = readdir(d)) {
        // A journal set aside earlier keeps its id from new worlds too.
        const uint64_t rid = id_of(e->d_name, ".journal.refused");
        if (rid != 0 && rid != UINT64_MAX && rid > app->next_world_id) {
            app->next_world_id = rid;
        }
        uint64_t id = id_of(e->d_name, ".state");
        const uint64_t jid = id_of(e->d_name, ".journal");
        if (jid != 0 && jid != UINT64_MAX) {
            // A journal is nothing without its state: looked at below.
            if (!push_id(&jids, &nj, &jcap, jid)) {
                break;
            }
            continue;
        }
        if (id == 0) {
            continue;
        }
        if (id == UINT64_MAX) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, e->d_name);
            app->states_refused++;
            say(app, APP_LOG_ERROR, "state_refused", 0, path,
                "its id is past 2^53 - 1, the largest a world can have", 0, 0, 0);
            continue;
        }
        if (!push_id(&ids, &n, &cap, id)) {
            break;
        }
    }
    closedir(d);
    if (n > 0) {
        qsort(ids, n, sizeof *ids, by_id);
    }
    // A journal without a state file (its state deleted, or a crash before
    // a new world's first file): kept aside and said, its id never reused
    // (a new world of that id would have removed it without a word).
    for (size_t k = 0; k < nj; ++k) {
        if (n > 0 && bsearch(&jids[k], ids, n, sizeof *ids, by_id) != NULL) {
            continue;
        }
        char name[64], path[4096], keep[4200];
        app__journal_name(jids[k], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
        snprintf(keep, sizeof keep, "%s.refused", path);
        rename(path, keep);
        app->journals_refused++;
        app->next_world_id = app->next_world_id > jids[k] ? app->next_world_id : jids[k];
        say(app, APP_LOG_ERROR, "journal_orphaned", jids[k], path,
            "no state file for it: nothing to replay it on; kept as .refused", 0, 0, 0);
    }
    free(jids);
    uint32_t loaded = 0;
    for (size_t i = 0; i < n; ++i) {
        // Whatever happens to this file, its id is never given to a new world.
        app->next_world_id = app->next_world_id > ids[i] ? app->next_world_id : ids[i];
        char name[64], path[4096], why[400] = "";
        app__state_name(ids[i], name, sizeof name);
        snprintf(path, sizeof path, "%s/%s", app->cfg.state_dir, name);
        uint8_t* buf = NULL;
        size_t len = 0;
        app_state st;
        memset(&st, 0, sizeof st);
        uint64_t t0 = uv_hrtime();
        if (app__file_read(path, &buf, &len, why, sizeof why) != 0 ||
            app__state_decode(buf, len, app->cfg.library, &st, why, sizeof why) != 0) {
            free(buf);
            app->states_refused++;
            say(app, APP_LOG_ERROR, "state_refused", ids[i], path, why, 0, 0, 0);
            continue;
        }
        free(buf);
        if (st.id != ids[i]) {
            snprintf(why, sizeof why, "the file holds world %" PRIu64 ", its name says %" PRIu64,
                     st.id, ids[i]);
            app__state_free(&st);
            app->states_refused++;
            say(app, APP_LOG_ERROR, "state_refused", ids[i], path, why, 0, 0, 0);
            continue;
        }
        app_world* w = NULL;
        rdp_code rc = app__world_adopt(app, &st, &w);
        app__state_free(&st);
        if (rc != RDP_OK) {
            app->states_refused++;
            say(app, APP_LOG_ERROR, "state_refused", ids[i], path,
                rc == RDP_E_TOO_LARGE ? "more worlds than --max-worlds" : "out of memory", 0, 0, 0);
            continue;
        }
        const uint64_t state_tick = sim_world_tick(w->sim);
        remember_state_file(w, path);
        char jname[64], jpath[4096];
        app__journal_name(w->id, jname, sizeof jname);
        snprintf(jpath, sizeof jpath, "%s/%s", app->cfg.state_dir, jname);
        app_replay_stats rs;
        bool set_aside = false;
        if (app__journal_replay(app, w, jpath, UINT64_MAX, NULL, &rs, why, sizeof why) != 0) {
            app->journals_refused++;
            say(app, APP_LOG_ERROR, "journal_refused", w->id, jpath, why, 0, 0, 0);
            set_aside = true;
        } else if (rs.bad_bytes > 0 && rs.damaged) {
            app->journals_refused++;
            snprintf(why, sizeof why,
                     "a damaged record at byte %" PRIu64
                     " (good ones after it, or a bad tail longer than any write): the %" PRIu64
                     " bytes from it on were not applied",
                     rs.good_end, rs.bad_bytes);
            say(app, APP_LOG_ERROR, "journal_damaged", w->id, jpath, why, 0, 0, 0);
            set_aside = true;
        } else if (rs.bad_bytes > 0) {
            snprintf(why, sizeof why, "%" PRIu64 " bytes of a torn last record cut off",
                     rs.bad_bytes);
            say(app, APP_LOG_WARN, "journal_torn", w->id, jpath, why, 0, 0, 0);
            set_aside = truncate(jpath, (off_t)rs.good_end) != 0;
        }
        if (set_aside) {
            // Kept whole for a look (world-ID.journal.refused); the world
            // as it stands is written at once, with a journal from it on,
            // so the files hold what the world holds.
            char keep[4200];
            snprintf(keep, sizeof keep, "%s.refused", jpath);
            rename(jpath, keep);
            w->journal_bytes = 0;
            if (app__persist_save_now(app, w, why, sizeof why) != 0) {
                down_until_saved(app, w, why);
            }
        }
        app__journal_open(app, w);
        w->last_ns = uv_hrtime();
        next_due(app, w);
        loaded++;
        app_log_line l;
        if (app__log_begin(&app->log, &l, APP_LOG_INFO, APP_LOGK_ALWAYS, "world_loaded",
                           uv_hrtime())) {
            app__log_u64(&l, "world", w->id);
            app__log_str(&l, "file", path);
            app__log_u64(&l, "bytes", len);
            app__log_u64(&l, "state_tick", state_tick);
            app__log_u64(&l, "replayed_commands", rs.commands);
            app__log_u64(&l, "tick", sim_world_tick(w->sim));
            char hash[20];
            snprintf(hash, sizeof hash, "%016" PRIx64, sim_world_hash(w->sim));
            app__log_str(&l, "hash", hash);
            app__log_f64(&l, "ms", (double)(uv_hrtime() - t0) / 1e6);
            app__log_end(&l);
        }
    }
    free(ids);
    return loaded;
}
