/*
 * event.c: the world's event queue (state changes, settling, quarantine),
 * a ring drained by the server after each tick.
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

uint64_t sim_world_quarantined(const sim_world* w) {
    return w->quarantined;
}
