/*
 * ragdollctl.c: the ragdollctl program: global options, choosing the
 * subcommand, connecting through rdc, and turning outcomes into exit codes
 * (ctl.h). What each subcommand sends and prints is commands.c's and
 * record.c's.
 */
#include "ctl.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_URL "ws://127.0.0.1:8080/ws"

static void usage_global(FILE* f) {
    fprintf(f,
            "usage: ragdollctl [--url URL] [--token T] [--json] [--timeout S] COMMAND [ARGS...]\n"
            "\n"
            "Talks to a ragdolld server (protocol/PROTOCOL.md).\n"
            "\n"
            "options:\n"
            "  --url URL      server WebSocket URL (default " DEFAULT_URL ")\n"
            "  --token T      access token, sent as \"Authorization: Bearer T\" in the\n"
            "                 handshake (16-128 characters of A-Z a-z 0-9 . _ ~ -); without\n"
            "                 it, the environment variable RAGDOLL_TOKEN, if set and not empty\n"
            "  --json         print the server's raw reply JSON (for scripts)\n"
            "  --timeout S    seconds to wait for the connection and for each reply (10)\n"
            "  --help         this text; COMMAND --help describes a command\n"
            "  --version      the version\n"
            "\n"
            "commands:\n");
    for (int i = 0; ctl_commands[i] != NULL; ++i) {
        fprintf(f, "  %-9s %s\n", ctl_commands[i]->name, ctl_commands[i]->synopsis);
    }
    fprintf(f, "\n"
               "exit codes: 0 success, 1 the server replied with an error (its code and\n"
               "message are printed) or with a malformed reply (no \"ok\": true, or a field\n"
               "the command needs missing), 2 usage error, 3 cannot connect (also when the\n"
               "server refuses the upgrade, e.g. 401 for a missing or unknown token),\n"
               "connection lost or no reply in time, 4 writing stdout or record's log\n"
               "failed (a reader of stdout that goes away, as in | head, is not a failure).\n");
}

int ctl_usage(const ctl_cmd* cmd, const char* fmt, ...) {
    fprintf(stderr, "ragdollctl %s: ", cmd->name);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: ragdollctl %s %s\n(ragdollctl %s --help for more)\n", cmd->name,
            cmd->synopsis, cmd->name);
    return CTL_USAGE;
}

void ctl_help(const ctl_cmd* cmd) {
    printf("usage: ragdollctl [global options] %s %s\n\n%s", cmd->name, cmd->synopsis, cmd->help);
}

// ---------------------------------------------------------------------------
// Finishing
// ---------------------------------------------------------------------------

static void on_signal_closed(uv_handle_t* h) {
    (void)h;
}

void ctl_finish(ctl* x, int code) {
    if (x->finished) {
        return;
    }
    x->finished = true;
    x->exit_code = code;
    if (x->stop != NULL) {
        x->stop(x);
    }
    rdc_close(x->c, NULL, NULL);
    if (x->signal_open) {
        x->signal_open = false;
        uv_close((uv_handle_t*)&x->sigint, on_signal_closed);
    }
}

bool ctl_check_output(ctl* x, FILE* f, const char* path) {
    if (fflush(f) == 0 && !ferror(f)) {
        return true;
    }
    int err = errno;
    if (f == stdout && (err == EPIPE || x->reader_gone)) {
        x->reader_gone = true;
        ctl_finish(x, CTL_OK);
        return false;
    }
    if (x->exit_code != CTL_OUTPUT) {
        fprintf(stderr, "ragdollctl: writing %s failed: %s\n", f == stdout ? "stdout" : path,
                err != 0 ? strerror(err) : "an I/O error");
    }
    ctl_finish(x, CTL_OUTPUT);
    // Also when the run has ended with another code already: the output
    // is incomplete.
    if (x->exit_code == CTL_OK) {
        x->exit_code = CTL_OUTPUT;
    }
    return false;
}

void ctl_print_error(const rdc_reply* r) {
    if (r->status == RDC_E_PROTOCOL) {
        fprintf(stderr, "ragdollctl: malformed reply: %s\n", r->message);
    } else {
        fprintf(stderr, "error: %s: %s\n", r->code, r->message);
    }
}

void ctl_on_reply(rdc_client* c, const rdc_reply* r, void* arg) {
    (void)c;
    ctl* x = arg;
    if (r->status != 0 && r->status != RDC_E_SERVER && r->status != RDC_E_PROTOCOL) {
        if (r->status == RDC_E_DISCONNECTED) {
            return; // on_state follows and says why (the server's close code and reason)
        }
        fprintf(stderr, "ragdollctl: no reply: %s\n", rdc_strerror(r->status));
        ctl_finish(x, CTL_CONNECTION);
        return;
    }
    if (x->json) {
        printf("%.*s\n", (int)r->len, r->text);
    }
    if (r->status != 0) {
        ctl_print_error(r);
        ctl_finish(x, CTL_SERVER_ERROR);
        return;
    }
    // With --json, print_ok only checks the reply.
    if (x->print_ok != NULL && !x->print_ok(x, r)) {
        fprintf(stderr, "ragdollctl: malformed reply: a field this command needs is missing or "
                        "of the wrong type\n");
        ctl_finish(x, CTL_SERVER_ERROR);
        return;
    }
    if (!x->json && x->print_ok == NULL) {
        printf("ok\n");
    }
    ctl_finish(x, CTL_OK);
}

// Whether text is valid UTF-8 (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF): the server closes the connection (1007) on a text
// frame that is not.
bool ctl_utf8_valid(const char* text, size_t len) {
    const unsigned char* p = (const unsigned char*)text;
    size_t i = 0;
    while (i < len) {
        unsigned char b = p[i];
        size_t n;
        uint32_t cp;
        if (b < 0x80) {
            i++;
            continue;
        } else if (b >= 0xc2 && b <= 0xdf) {
            n = 1;
            cp = b & 0x1f;
        } else if (b >= 0xe0 && b <= 0xef) {
            n = 2;
            cp = b & 0x0f;
        } else if (b >= 0xf0 && b <= 0xf4) {
            n = 3;
            cp = b & 0x07;
        } else {
            return false;
        }
        if (len - i <= n) {
            return false;
        }
        for (size_t k = 1; k <= n; ++k) {
            if ((p[i + k] & 0xc0) != 0x80) {
                return false;
            }
            cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

int ctl_check_command(const cJSON* cmd, char* why, size_t why_len) {
    char* text = rdc_json_print(cmd);
    if (text == NULL) {
        snprintf(why, why_len, "out of memory");
        return CTL_USAGE;
    }
    size_t len = strlen(text);
    int rc = 0;
    if (!ctl_utf8_valid(text, len)) {
        snprintf(why, why_len, "an argument is not valid UTF-8");
        rc = CTL_USAGE;
    } else if (len + CTL_ID_RESERVE > CTL_MAX_MESSAGE_BYTES) {
        snprintf(why, why_len, "the command would be %zu bytes: the server takes at most %d",
                 len + CTL_ID_RESERVE, CTL_MAX_MESSAGE_BYTES);
        rc = CTL_USAGE;
    }
    cJSON_free(text);
    return rc;
}

void ctl_send_request(ctl* x) {
    int rc = rdc_send(x->c, x->request, ctl_on_reply, x, NULL);
    if (rc != 0) {
        fprintf(stderr, "ragdollctl: cannot send: %s\n", rdc_strerror(rc));
        ctl_finish(x, rc == RDC_E_NOT_CONNECTED ? CTL_CONNECTION : CTL_USAGE);
    }
}

// ---------------------------------------------------------------------------
// Connection
// ---------------------------------------------------------------------------

static void on_state(rdc_client* c, const rdc_status* st, void* user) {
    (void)c;
    ctl* x = user;
    if (x->finished) {
        return;
    }
    if (st->state == RDC_CONNECTED) {
        x->cmd->start(x);
        return;
    }
    if (st->error == RDC_E_HANDSHAKE && st->http_status != 0 && st->http_status != 101) {
        // The server answered the upgrade with an HTTP error: say which.
        fprintf(stderr, "ragdollctl: %s: server refused the upgrade: %d%s%s\n", x->url,
                st->http_status, st->http_reason[0] != '\0' ? " " : "", st->http_reason);
        if (st->http_status == 401) {
            fprintf(stderr, "ragdollctl: %s\n",
                    x->token != NULL ? "the server does not accept this token (--token or "
                                       "RAGDOLL_TOKEN)"
                                     : "the server wants a token: --token T or RAGDOLL_TOKEN");
        }
        ctl_finish(x, CTL_CONNECTION);
        return;
    }
    if (st->was_connected) {
        fprintf(stderr, "ragdollctl: connection to %s lost: %s", x->url,
                st->error == 0 ? "the server closed it" : rdc_strerror(st->error));
    } else {
        fprintf(stderr, "ragdollctl: cannot connect to %s: %s", x->url, rdc_strerror(st->error));
    }
    if (st->close_code != 0) {
        fprintf(stderr, " (close code %u%s%s)", (unsigned)st->close_code,
                st->close_reason[0] != '\0' ? ": " : "", st->close_reason);
    }
    if (st->http_status != 0) {
        fprintf(stderr, " (HTTP %d)", st->http_status);
    }
    fprintf(stderr, "\n");
    ctl_finish(x, CTL_CONNECTION);
}

static void on_sigint(uv_signal_t* h, int signum) {
    (void)signum;
    ctl_finish(h->data, CTL_OK);
}

int main(int argc, char** argv) {
    ctl x;
    memset(&x, 0, sizeof x);
    x.url = DEFAULT_URL;
    x.timeout_ms = 10000;

    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"token", required_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"timeout", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    int o;
    // "+": stop at the first non-option, the command; its options are its own.
    while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
        switch (o) {
        case 'u':
            x.url = optarg;
            break;
        case 't':
            x.token = optarg;
            break;
        case 'j':
            x.json = true;
            break;
        case 'T': {
            double s;
            if (!ctl_parse_double(optarg, &s) || s <= 0 || s > 86400) {
                fprintf(stderr, "ragdollctl: --timeout wants seconds in (0, 86400], not %s\n",
                        optarg);
                return CTL_USAGE;
            }
            x.timeout_ms = (uint32_t)ceil(s * 1000);
            break;
        }
        case 'h':
            usage_global(stdout);
            return CTL_OK;
        case 'V':
            printf("ragdollctl " RDC_VERSION "\n");
            return CTL_OK;
        default:
            usage_global(stderr);
            return CTL_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "ragdollctl: no command given\n");
        usage_global(stderr);
        return CTL_USAGE;
    }
    const char* name = argv[optind];
    for (int i = 0; ctl_commands[i] != NULL; ++i) {
        if (strcmp(ctl_commands[i]->name, name) == 0) {
            x.cmd = ctl_commands[i];
        }
    }
    if (x.cmd == NULL) {
        fprintf(stderr, "ragdollctl: unknown command \"%s\"\n", name);
        usage_global(stderr);
        return CTL_USAGE;
    }
    int sub_argc = argc - optind;
    char** sub_argv = argv + optind;
    optind = 0; // getopt_long starts over (GNU: 0 also re-reads its settings)
    int rc = x.cmd->parse(&x, sub_argc, sub_argv);
    char why[160];
    if (rc == 0 && !x.finished && x.request != NULL &&
        ctl_check_command(x.request, why, sizeof why) != 0) {
        rc = ctl_usage(x.cmd, "%s", why);
    }
    if (rc != 0 || x.finished) {
        cJSON_Delete(x.request);
        if (x.sub_free != NULL) {
            x.sub_free(x.sub);
        }
        return rc;
    }

    // The token last: --help and usage errors do not depend on it.
    if (x.token == NULL) {
        const char* env = getenv("RAGDOLL_TOKEN");
        x.token = env != NULL && env[0] != '\0' ? env : NULL;
        if (x.token != NULL && !rdc_token_valid(x.token)) {
            // Not echoed: it is a secret, wherever it went wrong.
            fprintf(stderr,
                    "ragdollctl: RAGDOLL_TOKEN is not a token: it wants %d-%d characters "
                    "of A-Z a-z 0-9 . _ ~ -\n",
                    RDC_TOKEN_MIN, RDC_TOKEN_MAX);
            rc = CTL_USAGE;
        }
    } else if (!rdc_token_valid(x.token)) {
        fprintf(stderr, "ragdollctl: --token wants %d-%d characters of A-Z a-z 0-9 . _ ~ -\n",
                RDC_TOKEN_MIN, RDC_TOKEN_MAX);
        rc = CTL_USAGE;
    }
    if (rc != 0) {
        cJSON_Delete(x.request);
        if (x.sub_free != NULL) {
            x.sub_free(x.sub);
        }
        return rc;
    }

    // A reader that goes away (| head) must end us quietly, not by SIGPIPE
    // in the middle of a write to the server.
    signal(SIGPIPE, SIG_IGN);
    x.loop = uv_default_loop();
    rdc_config cfg = rdc_config_default();
    cfg.url = x.url;
    cfg.token = x.token;
    cfg.reconnect = false;
    cfg.connect_timeout_ms = x.timeout_ms;
    cfg.reply_timeout_ms = x.timeout_ms;
    cfg.on_state = on_state;
    cfg.user = &x;
    ctl_stream_config(&x, &cfg);
    rc = rdc_open(x.loop, &cfg, &x.c);
    if (rc != 0) {
        fprintf(stderr, "ragdollctl: %s: %s\n", x.url, rdc_strerror(rc));
        cJSON_Delete(x.request);
        if (x.sub_free != NULL) {
            x.sub_free(x.sub);
        }
        return rc == RDC_E_URL || rc == RDC_E_CONFIG ? CTL_USAGE : CTL_CONNECTION;
    }
    if (x.cmd->stops_on_signal) {
        uv_signal_init(x.loop, &x.sigint);
        x.sigint.data = &x;
        uv_signal_start_oneshot(&x.sigint, on_sigint, SIGINT);
        x.signal_open = true;
    }
    uv_run(x.loop, UV_RUN_DEFAULT);
    cJSON_Delete(x.request);
    if (x.sub_free != NULL) {
        x.sub_free(x.sub);
    }
    if (uv_loop_close(x.loop) != 0) {
        fprintf(stderr, "ragdollctl: internal error: handles left open\n");
    }
    errno = 0;
    ctl_check_output(&x, stdout, NULL);
    return x.exit_code;
}
