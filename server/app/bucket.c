/*
 * bucket.c: token buckets, the per-client rates of the server: commands
 * per second (every command a client sends pays one token, answered at once
 * or queued, PROTOCOL.md §1) and bytes of describe replies per second.
 * A client over its rate gets rate_limited replies; it is never
 * disconnected for a burst.
 */
#include "app_internal.h"

#include <math.h>

void app__bucket_init(app_bucket* b, double rate, double burst, uint64_t now_ns) {
    b->tokens = burst;
    b->rate = rate;
    b->burst = burst;
    b->last_ns = now_ns;
}

bool app__bucket_take(app_bucket* b, uint64_t now_ns, size_t amount, uint64_t* retry_ms) {
    if (now_ns > b->last_ns) {
        // ns × tokens/s / 1e9: a long idle interval simply fills the bucket.
        double refill = (double)(now_ns - b->last_ns) * b->rate / 1e9;
        b->tokens = fmin(b->burst, b->tokens + refill);
        b->last_ns = now_ns;
    }
    if (b->tokens < 0.0) {
        *retry_ms = (uint64_t)ceil(-b->tokens * 1000.0 / b->rate);
        return false;
    }
    b->tokens -= (double)amount;
    return true;
}
