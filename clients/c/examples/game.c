// game.c: follow the demo world's first character, print its head each
// snapshot, kill it after two seconds. Build: cc game.c $(pkg-config --cflags --libs rdc)
#include <rdc.h>
#include <stdio.h>

static int snapshots = 0;
static int exit_code = 0;

static void on_kill(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)arg;
    if (r->status == 0) {
        printf("killed: the impulse hit the %s\n",
               cJSON_GetObjectItem(r->json, "bone")->valuestring);
    } else {
        fprintf(stderr, "kill failed: %s: %s\n", r->code, r->message);
        exit_code = 1;
    }
    rdc_close(c, NULL, NULL); // the loop ends once the client is closed
}

static void on_subscribed(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)arg;
    // The server said no (not_found: there is no such world): give up. A
    // lost connection (RDC_E_DISCONNECTED) is not an answer: rdc reconnects
    // and subscribes again.
    if (r->status == RDC_E_SERVER || r->status == RDC_E_PROTOCOL) {
        fprintf(stderr, "subscribe failed: %s: %s\n", r->code, r->message);
        exit_code = 1;
        rdc_close(c, NULL, NULL);
    }
}

static void on_state(rdc_client* c, const rdc_status* st, void* user) {
    (void)c;
    (void)user;
    if (st->state == RDC_DISCONNECTED) { // say why, rather than wait in silence
        fprintf(stderr, "%s: %s; trying again in %u ms\n",
                st->was_connected ? "connection lost" : "cannot connect", rdc_strerror(st->error),
                (unsigned)st->retry_ms);
    }
}

static void on_snapshot(rdc_client* c, const rdc_snapshot* s, void* user) {
    (void)user;
    for (uint32_t i = 0; i < s->entity_count; ++i) {
        const rdc_entity* e = &s->entities[i];
        int head = rdc_entity_bone(e, "head");
        if (e->kind != RDC_KIND_CHARACTER || head < 0) {
            continue;
        }
        const float* p = e->pose + 7 * head; // x, y, z, qx, qy, qz, qw
        printf("tick %llu: head at %.3f %.3f %.3f (%s)\n", (unsigned long long)s->tick, p[0], p[1],
               p[2], rdc_char_state_name(e->state));
        if (++snapshots == 60) { // 2 s at 30 Hz: shoot it in the head, from the front
            rdc_sendf(c, on_kill, NULL,
                      "{\"op\":\"kill\",\"world\":%llu,\"entity\":%llu,\"hit_point\":[%f,%f,%f],"
                      "\"impulse\":[0,0,-40]}",
                      (unsigned long long)s->world, (unsigned long long)e->id, p[0], p[1], p[2]);
        }
        return;
    }
}

int main(int argc, char** argv) {
    rdc_config cfg = rdc_config_default();
    cfg.url = argc > 1 ? argv[1] : "ws://127.0.0.1:8080/ws";
    cfg.on_snapshot = on_snapshot;
    cfg.on_state = on_state;
    rdc_client* c;
    int rc = rdc_open(uv_default_loop(), &cfg, &c);
    if (rc != 0) {
        fprintf(stderr, "%s: %s\n", cfg.url, rdc_strerror(rc));
        return 1;
    }
    // World 1 is the demo; on_subscribed hears whether the server has it.
    rdc_subscribe(c, 1, RDC_FORMAT_BINARY, 30, on_subscribed, NULL);
    uv_run(uv_default_loop(), UV_RUN_DEFAULT);
    return uv_loop_close(uv_default_loop()) == 0 ? exit_code : 1;
}
