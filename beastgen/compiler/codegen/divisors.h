#include <string.h>

#define BG_DIVISORS_LIMIT 1048576  /* |n| up to this: at most 240 divisors, found in 1024 steps */
#define BG_DIVISORS_MAX 256
/* The positive divisors of 1 <= n <= BG_DIVISORS_LIMIT, ascending, into out; how many. */
static int64_t bg_divisors(int64_t n, int64_t *out) {
    int64_t large[BG_DIVISORS_MAX], small = 0, big = 0;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d == 0) {
            out[small++] = d;
            if (d * d != n) large[big++] = n / d;
        }
    }
    while (big > 0) out[small++] = large[--big];
    return small;
}
