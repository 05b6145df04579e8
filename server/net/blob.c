/*
 * blob.c: refcounted payloads shared by session queues (net.h).
 */
#include "net.h"

#include <stdlib.h>
#include <string.h>

net_blob* net_blob_create(const void* data, size_t len) {
    net_blob* b = malloc(sizeof *b + len);
    if (b == NULL) {
        return NULL;
    }
    b->refs = 1;
    b->len = len;
    if (data != NULL && len > 0) {
        memcpy(b->data, data, len);
    }
    return b;
}

net_blob* net_blob_ref(net_blob* b) {
    b->refs++;
    return b;
}

void net_blob_unref(net_blob* b) {
    if (b != NULL && --b->refs == 0) {
        free(b);
    }
}
