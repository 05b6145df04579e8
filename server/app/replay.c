/*
 * replay.c: ragdolld --replay: a world's state file and journal stepped
 * offline, with no network, printing the state hash of every tick, so a
 * bug report's files can be brought to the tick where it went wrong, and
 * a recorded session checked against the live world's hashes.
 */
#include "persist.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int app_replay(const app_config* cfg, const char* state_path, const char* journal_path,
               uint64_t until, bool print_hash, FILE* out, FILE* err) {
    app_server* app = calloc(1, sizeof *app);
    if (app == NULL) {
        fprintf(err, "ragdolld: out of memory\n");
        return 1;
    }
    app->cfg = *cfg;
    app->cfg.max_worlds = 1;
    app->cfg.state_dir = NULL; // nothing is written
    app->worlds = calloc(1, sizeof *app->worlds);
    app__log_init(&app->log, err, APP_LOG_ERROR, cfg->log_format);
    uint8_t* buf = NULL;
    size_t len = 0;
    char why[512] = "";
    app_state st;
    memset(&st, 0, sizeof st);
    int rc = 1;
    app_world* w = NULL;
    if (app->worlds == NULL) {
        fprintf(err, "ragdolld: out of memory\n");
    } else if (app__file_read(state_path, &buf, &len, why, sizeof why) != 0 ||
               app__state_decode(buf, len, cfg->library, &st, why, sizeof why) != 0) {
        fprintf(err, "ragdolld: %s: %s\n", state_path, why);
    } else if (app__world_adopt(app, &st, &w) != RDP_OK) {
        fprintf(err, "ragdolld: out of memory\n");
    } else if (until != UINT64_MAX && until < sim_world_tick(w->sim)) {
        fprintf(err, "ragdolld: %s holds tick %" PRIu64 ", after --until %" PRIu64 "\n", state_path,
                sim_world_tick(w->sim), until);
    } else {
        FILE* hashes = print_hash ? out : NULL;
        app_replay_stats rs;
        memset(&rs, 0, sizeof rs);
        if (print_hash) {
            fprintf(out, "%" PRIu64 " %016" PRIx64 "\n", sim_world_tick(w->sim),
                    sim_world_hash(w->sim));
        }
        if (journal_path != NULL &&
            app__journal_replay(app, w, journal_path, until, hashes, &rs, why, sizeof why) != 0) {
            fprintf(err, "ragdolld: %s: %s\n", journal_path, why);
        } else {
            // On to `until` with no more commands (UINT64_MAX: stop at the
            // journal's last tick).
            while (until != UINT64_MAX && sim_world_tick(w->sim) < until) {
                sim_world_step(w->sim);
                if (print_hash) {
                    fprintf(out, "%" PRIu64 " %016" PRIx64 "\n", sim_world_tick(w->sim),
                            sim_world_hash(w->sim));
                }
            }
            // What stopped it: --until, the journal's end, or a bad record
            // (a torn last one is a crash's; damage means records were lost).
            char note[300] = "";
            const bool stopped = until != UINT64_MAX && rs.stopped_at_until;
            if (stopped) {
                snprintf(note, sizeof note, " up to --until %" PRIu64, until);
            } else if (rs.bad_bytes > 0 && rs.damaged) {
                snprintf(note, sizeof note,
                         " (the journal is damaged at byte %" PRIu64 ": the %" PRIu64
                         " bytes from there could not be replayed)",
                         rs.good_end, rs.bad_bytes);
            } else if (rs.bad_bytes > 0) {
                snprintf(note, sizeof note,
                         " (the journal's last record, at byte %" PRIu64 ", is torn: %" PRIu64
                         " bytes, a crash mid-write)",
                         rs.good_end, rs.bad_bytes);
            }
            fprintf(err,
                    "ragdolld: world %" PRIu64 " \"%s\": %" PRIu64
                    " commands replayed%s, tick %" PRIu64 ", hash %016" PRIx64 "\n",
                    w->id, w->name, rs.commands, note, sim_world_tick(w->sim),
                    sim_world_hash(w->sim));
            rc = !stopped && rs.bad_bytes > 0 && rs.damaged ? 1 : 0;
            if (fflush(out) != 0 || ferror(out)) {
                fprintf(err, "ragdolld: cannot write the hashes: %s\n", strerror(errno));
                rc = 1;
            }
        }
    }
    free(buf);
    app__state_free(&st);
    if (w != NULL) {
        app__world_free(w);
    }
    free(app->worlds);
    free(app);
    return rc;
}
