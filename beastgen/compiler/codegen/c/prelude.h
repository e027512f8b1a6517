#if defined(__GNUC__)
/* The few <math.h> and <stdint.h> names used, as the compiler's own builtins and types: the two
   headers are most of what gcc parses here (about 5 ms of a cold count's 80 ms compile). */
#define fmod __builtin_fmod
#define copysign __builtin_copysign
#define floor __builtin_floor
#define ceil __builtin_ceil
#define fabs __builtin_fabs
#define pow __builtin_pow
#define isfinite __builtin_isfinite
#define isinf __builtin_isinf
#define isnan __builtin_isnan
#define NAN __builtin_nan("")
#define INFINITY __builtin_inf()
typedef __INT64_TYPE__ int64_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __UINT32_TYPE__ uint32_t;
#else
#include <math.h>
#include <stdint.h>
#endif

/* C's / and % on 64-bit integers, through the CPU's much faster 32-bit division when both fit
   (as LLVM does for Numba on x86). */
static inline int64_t bg_cdiv(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a / (uint32_t)b);
    return a / b;
}
static inline int64_t bg_cmod(int64_t a, int64_t b) {
    if ((((uint64_t)a | (uint64_t)b) >> 32) == 0) return (int64_t)((uint32_t)a % (uint32_t)b);
    return a % b;
}
/* The semantics table's value primitives (language/semantics.py): Python's value where Python does
   not raise, and a harmless one where it would (the guards the nest tests first reject those), so
   that no operand ever makes an operation trap: a zero divisor gives 0, INT64_MIN // -1 wraps. */
/* Python's // and % on integers (floor, the remainder takes the divisor's sign). */
static inline int64_t bg_floordiv_nz(int64_t a, int64_t b) {
    if (b == -1) return (int64_t)(0 - (uint64_t)a);
    int64_t q = bg_cdiv(a, b);
    return (bg_cmod(a, b) != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t bg_mod_nz(int64_t a, int64_t b) {
    if (b == -1) return 0;
    int64_t r = bg_cmod(a, b);
    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
static inline int64_t bg_floordiv(int64_t a, int64_t b) { return b == 0 ? 0 : bg_floordiv_nz(a, b); }
static inline int64_t bg_mod(int64_t a, int64_t b) { return b == 0 ? 0 : bg_mod_nz(a, b); }
/* CPython's float floor division and modulo (floatobject.c, _float_div_mod). */
static inline void bg_divmod_f(double vx, double wx, double *floordiv, double *mod) {
    double div;
    *mod = fmod(vx, wx);
    div = (vx - *mod) / wx;
    if (*mod) {
        if ((wx < 0) != (*mod < 0)) { *mod += wx; div -= 1.0; }
    } else {
        *mod = copysign(0.0, wx);
    }
    if (div) {
        *floordiv = floor(div);
        if (div - *floordiv > 0.5) *floordiv += 1.0;
    } else {
        *floordiv = copysign(0.0, vx / wx);
    }
}
static inline double bg_floordiv_f(double a, double b) {
    double q, r;
    if (b == 0.0) return 0.0;
    bg_divmod_f(a, b, &q, &r);
    return q;
}
static inline double bg_mod_f(double a, double b) {
    double q, r;
    if (b == 0.0) return 0.0;
    bg_divmod_f(a, b, &q, &r);
    return r;
}
/* int ** int, the exponent >= 0 (the plan refuses one that may be negative; a result past 64 bits
   too: this wraps like Numba). */
static inline int64_t bg_pow_i(int64_t base, int64_t exponent) {
    uint64_t result = 1, b = (uint64_t)base;
    while (exponent > 0) {
        if (exponent & 1) result *= b;
        b *= b;
        exponent >>= 1;
    }
    return (int64_t)result;
}
/* math.floor, math.ceil, int() of a float already rounded: NaN and the infinities raise in Python
   (guarded); the interval analysis proves every other value inside 64 bits or refuses the space. */
static inline int64_t bg_to_int(double x) {
    if (!(x >= -9223372036854775808.0 && x < 9223372036854775808.0)) return 0;
    return (int64_t)x;
}
static inline int64_t bg_min_i(int64_t a, int64_t b) { return b < a ? b : a; }
static inline int64_t bg_max_i(int64_t a, int64_t b) { return b > a ? b : a; }
static inline double bg_min_f(double a, double b) { return b < a ? b : a; }
static inline double bg_max_f(double a, double b) { return b > a ? b : a; }
static inline int64_t bg_abs_i(int64_t a) { return a < 0 ? (int64_t)(0 - (uint64_t)a) : a; }
