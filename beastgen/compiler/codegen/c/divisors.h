#include <string.h>

#define BG_DIVISORS_LIMIT 1048576  /* |n| up to this: at most 240 divisors, found in 1024 steps */
#define BG_DIVISORS_MAX 256
/* The positive divisors of 0 <= n <= BG_DIVISORS_LIMIT, ascending, into out; how many (none of 0):
   those up to its square root, then their partners n / d. */
static int64_t bg_divisors(int64_t n, int64_t *out) {
    int64_t small = 0, size;
    for (int64_t d = 1; d * d <= n; d++) {
        if (n % d == 0) out[small++] = d;
    }
    size = small;
    for (int64_t index = small - 1; index >= 0; index--) {
        if (n / out[index] != out[index]) out[size++] = n / out[index];
    }
    return size;
}
/* gcd(a, |b|) of 1 <= a and any 64-bit b (INT64_MIN included), by Stein's binary algorithm: no division. */
static int64_t bg_gcd(int64_t a, int64_t b) {
    uint64_t u = (uint64_t)a, v = b < 0 ? 0 - (uint64_t)b : (uint64_t)b;
    if (v == 0) return a;
    int shift = __builtin_ctzll(u | v);
    u >>= __builtin_ctzll(u);
    do {
        v >>= __builtin_ctzll(v);
        if (u > v) { uint64_t t = v; v = u; u = t; }
        v -= u;
    } while (v != 0);
    return (int64_t)(u << shift);
}
