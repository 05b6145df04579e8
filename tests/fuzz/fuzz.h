/*
 * fuzz.h: what the libFuzzer targets of tests/fuzz share: the entry
 * point's prototype, a check that aborts (libFuzzer then saves the input
 * as a crash) and a strict UTF-8 validator.
 *
 * A check holds for every input; a failed one is a bug in the code under
 * test (or in the harness's model of it), never a rejected input.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/// libFuzzer's entry point: one input, returns 0.
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/// Aborts with the condition's text when it is false.
#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/// Leaves a function of the harness out of coverage: a checker's loops and
/// comparisons are no news about the code under test, and would slow every
/// run and crowd the corpus with inputs that only exercise the checker.
#define FUZZ_NO_COVERAGE __attribute__((no_sanitize("coverage")))

/// Whether s[0..n) is UTF-8 as RFC 3629 has it: no overlong forms, no
/// surrogates, nothing above U+10FFFF (what a WebSocket text frame must be,
/// RFC 6455 §8.1).
FUZZ_NO_COVERAGE static inline bool fuzz_utf8_valid(const uint8_t* s, size_t n) {
    size_t i = 0;
    while (i < n) {
        uint32_t c = s[i];
        size_t extra;
        uint32_t min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            extra = 1;
            min = 0x80;
            c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            extra = 2;
            min = 0x800;
            c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            extra = 3;
            min = 0x10000;
            c &= 0x07;
        } else {
            return false;
        }
        if (n - i <= extra) {
            return false;
        }
        for (size_t k = 1; k <= extra; ++k) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return false;
            }
            c = (c << 6) | (s[i + k] & 0x3fu);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) {
            return false;
        }
        i += extra + 1;
    }
    return true;
}
