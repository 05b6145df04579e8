/*
 * report.c: ragdoll-load --html, a report to open in a browser: the
 * numbers of each phase of the run (ramp, run, drain) beside plots of the
 * snapshot rate, the command rate and the command round trips over time.
 * One file, self-contained: uPlot (npm) and the data are inlined, so it
 * can be mailed or attached to a bug report and opened offline.
 */
#include "load.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* const phase_names[LOAD_PHASES] = {"ramp", "run", "drain"};

// The whole of a file, NUL-terminated (free it), or NULL.
static char* slurp(const char* dir, const char* name, char* err, size_t cap) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(err, cap, "cannot read %s (uPlot: npm ci, or --uplot DIR)", path);
        return NULL;
    }
    char* buf = NULL;
    size_t len = 0, got;
    char chunk[65536];
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        char* more = realloc(buf, len + got + 1);
        if (more == NULL) {
            free(buf);
            fclose(f);
            snprintf(err, cap, "out of memory reading %s", path);
            return NULL;
        }
        buf = more;
        memcpy(buf + len, chunk, got);
        len += got;
    }
    fclose(f);
    if (buf == NULL) {
        buf = calloc(1, 1);
    } else {
        buf[len] = '\0';
    }
    return buf;
}

// Text safe inside an HTML element and a JS string: no <, >, &, ", '.
static void put_text(FILE* f, const char* s) {
    for (; *s != '\0'; ++s) {
        switch (*s) {
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '&':
            fputs("&amp;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            fputc(*s, f);
        }
    }
}

// One series as a JS array of numbers (null for a second without any).
static void put_series(FILE* f, const load_report* rep, int which) {
    fputc('[', f);
    for (uint32_t i = 0; i < rep->sample_count; ++i) {
        const load_sample* s = &rep->samples[i];
        double v = which == 0   ? s->t_s
                   : which == 1 ? s->snapshots_per_s
                   : which == 2 ? s->commands_per_s
                   : which == 3 ? s->p50_ms
                   : which == 4 ? s->p99_ms
                   : which == 5 ? (double)s->up
                                : s->rx_per_s / 1e3;
        if ((which == 3 || which == 4) && s->commands_per_s == 0.0) {
            fputs(i > 0 ? ",null" : "null", f);
        } else {
            fprintf(f, i > 0 ? ",%.4g" : "%.4g", v);
        }
    }
    fputc(']', f);
}

int load_report_html(const char* path, const char* uplot_dir, const load_report* rep, char* err,
                     size_t err_cap) {
    char* js = slurp(uplot_dir, "uPlot.iife.min.js", err, err_cap);
    char* css = js != NULL ? slurp(uplot_dir, "uPlot.min.css", err, err_cap) : NULL;
    if (css == NULL) {
        free(js);
        return -1;
    }
    FILE* f = fopen(path, "w");
    if (f == NULL) {
        snprintf(err, err_cap, "cannot write %s", path);
        free(js);
        free(css);
        return -1;
    }
    fputs("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<title>ragdoll-load report</title>\n<style>\n",
          f);
    fputs(css, f);
    fputs("\nbody{font:14px sans-serif;margin:24px;color:#223}\n"
          "table{border-collapse:collapse;margin:12px 0}td,th{padding:4px 10px;border-bottom:1px "
          "solid #ccd;text-align:right}th:first-child,td:first-child{text-align:left}\n"
          ".plots{display:flex;flex-wrap:wrap;gap:16px}.plot h3{margin:8px 0 2px;font-size:13px}\n"
          "</style>\n</head><body>\n<h1>ragdoll-load</h1>\n<p>",
          f);
    fprintf(f, "%u clients against ", rep->clients);
    put_text(f, rep->url);
    fputs(" (", f);
    put_text(f, rep->scenario);
    fprintf(f,
            "); %llu errors. Round trips over the whole run: p50 %.2f ms, p90 %.2f ms, p99 "
            "%.2f ms, max %.2f ms.</p>\n",
            (unsigned long long)rep->errors, load_hist_quantile(rep->latency, 0.5) / 1000,
            load_hist_quantile(rep->latency, 0.9) / 1000,
            load_hist_quantile(rep->latency, 0.99) / 1000, (double)rep->latency->max_us / 1000);
    fputs("<table id=\"phases\"><tr><th>phase</th><th>seconds</th><th>snapshots/s</th>"
          "<th>replies</th><th>p50 ms</th><th>p90 ms</th><th>p99 ms</th><th>max ms</th></tr>\n",
          f);
    for (int p = 0; p < LOAD_PHASES; ++p) {
        const load_phase_stats* ps = &rep->phases[p];
        fprintf(f,
                "<tr><td>%s</td><td>%.1f</td><td>%.1f</td><td>%llu</td><td>%.2f</td><td>%.2f</td>"
                "<td>%.2f</td><td>%.2f</td></tr>\n",
                phase_names[p], ps->seconds,
                ps->seconds > 0 ? (double)ps->snapshots / ps->seconds : 0.0,
                (unsigned long long)ps->latency.count, load_hist_quantile(&ps->latency, 0.5) / 1000,
                load_hist_quantile(&ps->latency, 0.9) / 1000,
                load_hist_quantile(&ps->latency, 0.99) / 1000, (double)ps->latency.max_us / 1000);
    }
    fputs("</table>\n<div class=\"plots\">\n"
          "<div class=\"plot\" id=\"snapshots\"><h3>snapshots per second, all clients</h3></div>\n"
          "<div class=\"plot\" id=\"latency\"><h3>command round trip, ms (p50, p99 each "
          "second)</h3></div>\n"
          "<div class=\"plot\" id=\"commands\"><h3>commands per second, and clients up</h3></div>\n"
          "<div class=\"plot\" id=\"bytes\"><h3>received, kB/s</h3></div>\n"
          "</div>\n<script>\n",
          f);
    fputs(js, f);
    fputs("\n</script>\n<script>\nconst data = {t: ", f);
    put_series(f, rep, 0);
    const char* names[] = {NULL, "snapshots", "commands", "p50", "p99", "up", "kbps"};
    for (int k = 1; k <= 6; ++k) {
        fprintf(f, ",\n%s: ", names[k]);
        put_series(f, rep, k);
    }
    fputs(",\nphase: [", f);
    for (uint32_t i = 0; i < rep->sample_count; ++i) {
        fprintf(f, i > 0 ? ",\"%s\"" : "\"%s\"", phase_names[rep->samples[i].phase]);
    }
    fputs("]};\n"
          "const plot = (id, series, ys) => new uPlot({width: 520, height: 220,\n"
          "  scales: {x: {time: false}}, axes: [{label: 'seconds'}, {}],\n"
          "  series: [{label: 's'}, ...series]}, [data.t, ...ys], document.getElementById(id));\n"
          "window.reportPlots = [\n"
          "  plot('snapshots', [{label: 'snapshots/s', stroke: '#1976d2'}], [data.snapshots]),\n"
          "  plot('latency', [{label: 'p50', stroke: '#388e3c'}, {label: 'p99', stroke: "
          "'#d32f2f'}],\n"
          "    [data.p50, data.p99]),\n"
          "  plot('commands', [{label: 'commands/s', stroke: '#f57c00'}, {label: 'clients up', "
          "stroke: '#7b1fa2'}],\n"
          "    [data.commands, data.up]),\n"
          "  plot('bytes', [{label: 'kB/s', stroke: '#455a64'}], [data.kbps]),\n"
          "];\n</script>\n</body></html>\n",
          f);
    free(js);
    free(css);
    if (fclose(f) != 0) {
        snprintf(err, err_cap, "cannot write %s", path);
        return -1;
    }
    return 0;
}
