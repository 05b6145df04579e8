/*
 * event.c: the world's event queue (state changes, settling, quarantine),
 * a ring drained by the server after each tick, and the ring the reports
 * (impacts, joint limit hits) are kept in until drained.
 */
#include "rigid.h"
#include "vec.h"
#include "world.h"

#include <string.h>

void sim__push_event(sim_world* w, sim_event_kind kind, sim_entity_id id, sim_char_state state,
                     uint64_t tick) {
    if (w->event_count == SIM__MAX_EVENTS) {
        // Nobody drained: the oldest goes.
        w->event_head = (w->event_head + 1) % SIM__MAX_EVENTS;
        w->event_count--;
    }
    sim_event* e = &w->events[(w->event_head + w->event_count) % SIM__MAX_EVENTS];
    e->kind = kind;
    e->entity = id;
    e->state = state;
    e->tick = tick;
    w->event_count++;
}

uint32_t sim_world_drain_events(sim_world* w, sim_event* out, uint32_t cap) {
    uint32_t n = 0;
    while (n < cap && w->event_count > 0) {
        out[n++] = w->events[w->event_head];
        w->event_head = (w->event_head + 1) % SIM__MAX_EVENTS;
        w->event_count--;
    }
    return n;
}

uint32_t sim_world_peek_events(const sim_world* w, sim_event* out, uint32_t cap) {
    uint32_t n = 0;
    for (; n < cap && n < w->event_count; ++n) {
        out[n] = w->events[(w->event_head + n) % SIM__MAX_EVENTS];
    }
    return n;
}

void sim__ring_push(sim__ring* r, const void* item) {
    if (r->count == r->cap) {
        r->head = (r->head + 1) % r->cap; // nobody drained: the oldest goes
        r->count--;
        r->dropped++;
    }
    memcpy((char*)r->items + (size_t)((r->head + r->count) % r->cap) * r->elem, item, r->elem);
    r->count++;
}

uint32_t sim__ring_drain(sim__ring* r, void* out, uint32_t cap, uint64_t* dropped) {
    uint32_t n = 0;
    if (out == NULL) {
        r->head = 0;
        r->count = 0;
    }
    for (; out != NULL && n < cap && r->count > 0; ++n) {
        memcpy((char*)out + (size_t)n * r->elem, (const char*)r->items + (size_t)r->head * r->elem,
               r->elem);
        r->head = (r->head + 1) % r->cap;
        r->count--;
    }
    if (dropped != NULL) {
        *dropped = r->dropped;
    }
    if (r->count == 0) {
        r->dropped = 0;
    }
    return n;
}

uint64_t sim_world_quarantined(const sim_world* w) {
    return w->quarantined;
}
