"""C source of float32 exp2, exp, log2, log, sin and cos that gcc vectorises (libm's scalar calls keep a loop scalar,
and its vector variants need -ffast-math): straight-line code, integer bit tricks and polynomials. Errors over every
float32, special values and subnormals included: exp2 < 0.88 ulp (1.08 without fma), exp < 0.91 ulp (1.18 without
fma), log2 < 1.09 ulp (1.13 without fma), log < 0.86 ulp, sin and cos < 0.502 ulp.

The polynomials are near-minimax fits (relative error): 2^r on [-1/2, 1/2] to 3e-9, e^r on [-0.347, 0.347] to 4.5e-9
(its coefficients in float32), log2(1+f) and log(1+f) on [sqrt(1/2)-1, sqrt(2)-1] to 5e-9, sin and cos on
[-pi/4, pi/4] in double to 7e-11. sin and cos reduce x by pi/2 in fixed point with 128 bits of 2/pi chosen by x's
exponent (Payne-Hanek), exact for every float.

The exp and log polynomials use fma where the target has it (kernels are compiled with -ffp-contract=off, so this is
explicit), else a multiply and an add.

Special values are computed from x (x - x, x times infinity, not NAN) and 2/pi's words are masked in, not loaded: a
constant result lets gcc thread the kernel's own comparisons into mask selects it does not vectorise, and it makes
table loads conditional, which it does not vectorise either.
"""

TWO_OVER_PI = 0xa2f9836e4e441529fc2757d1f534ddc0db6295993c439041fe5163abdebbc561   # 2/pi, 256 bits after the point


def _word(v: int) -> int:
  """The 32 bits of 2/pi at positions [32 v - 32, 32 v), the bit of weight 2^-i at position i."""
  return (TWO_OVER_PI >> (257 - 32 * v)) & 0xffffffff if v else 0


def _words() -> str:
  """C declaring w0..w3, the words at u + i, u in [0, 4]: the word for u = 0 with the differences to the next ones
  masked in."""
  lines = []
  for i in range(4):
    words = [_word(i)] + [_word(i + c - 1) ^ _word(i + c) for c in range(1, 5)]
    lines.append(f"  uint32_t w{i} = tg_2opi_word(u, {', '.join(f'0x{w:08x}u' for w in words)});\n")
  return "".join(lines)


SOURCE = r"""
#if defined(TG_FMAF)
#elif defined(__FMA__) || defined(__ARM_FEATURE_FMA)
#define TG_FMAF(a, b, c) __builtin_fmaf(a, b, c)
#define TG_FMA(a, b, c) __builtin_fma(a, b, c)
#else
#define TG_FMAF(a, b, c) ((a) * (b) + (c))
#define TG_FMA(a, b, c) ((a) * (b) + (c))
#endif
#if !defined(TG_FMAF_EXACT)   /* rounded once on every target: the instruction where there is one, else libm's */
#define TG_FMAF_EXACT(a, b, c) __builtin_fmaf(a, b, c)
#define TG_FMA_EXACT(a, b, c) __builtin_fma(a, b, c)
#endif

/* c ? a : b as bit operations: gcc turns a ?: into a branch and may copy the rest of the function into each side
   (to thread later tests through), and a vectorised loop then computes every copy in every lane */
TG_INLINE uint32_t tg_sel(int c, uint32_t a, uint32_t b) { uint32_t m = -(uint32_t)c; return (a & m) | (b & ~m); }
TG_INLINE float tg_self(int c, float a, float b) { return tg_ffrom(tg_sel(c, tg_fbits(a), tg_fbits(b))); }
TG_INLINE double tg_seld(int c, double a, double b) {
  uint64_t m = -(uint64_t)c;
  return tg_dfrom((tg_dbits(a) & m) | (tg_dbits(b) & ~m));
}

/* p 2^n, where t = 1.5 2^23 + n (a float holding the integer n in its low bits, |n| <= 151), applied as two powers of
   two, 2^(n >> 1) and 2^(n - (n >> 1)), so that results below 2^-126 are rounded once, to the right subnormal; both
   scales' bits come from t's in three integer operations each (t's bits shifted up by 23 are n's, and 0x4b400000,
   t's bits less n, is even) */
TG_INLINE float tg_scaled(float p, float t) {
  uint32_t u = tg_fbits(t), s1 = ((uint32_t)((int32_t)u >> 1) + (127u - (0x4b400000u >> 1))) << 23;
  return p * tg_ffrom(s1) * tg_ffrom((u << 23) - s1 + (254u << 23));
}

/* e^x and 2^x beyond the range where they are computed: 0 for x < 0, infinity for x > 0, NaN for NaN, as x times
   infinity with its negative values raised to 0 (the comparison is false for NaN, which stays): one select fewer
   than picking by the sign and then by NaN (tanh, exp and a division over 256K floats, one thread: 197 -> 185 us on
   AVX-512, 309 -> 290 on AVX2).
   They are selected rather than computed from a clamped x, whose 2^n would underflow to 0 in the scaling: a host
   that handles a subnormal or underflowing result in microcode then stalls on every vector holding one (a masked
   softmax ran 3x slower) */
TG_INLINE float tg_exp_beyond(float x) { float t = x * tg_ffrom(0x7f800000u); return tg_self(0.0f > t, 0.0f, t); }

/* 2^x = 2^n 2^r with n = round(x), |r| <= 1/2, for |x| <= 151 (|x|'s bits compared as a signed integer: one
   instruction, where an unsigned comparison of vectors takes two) */
TG_INLINE float tg_exp2f(float x) {
  uint32_t ix = tg_fbits(x);
  int out = (int32_t)(ix & 0x7fffffffu) > 0x43170000;
  float c = tg_ffrom(tg_sel(out, 0u, ix));
  float t = c + 0x1.8p23f, r = c - (t - 0x1.8p23f);
  float p = 0x1.417a9cp-13f;
  p = TG_FMAF(p, r, 0x1.5f0948p-10f);
  p = TG_FMAF(p, r, 0x1.3b2dd2p-7f);
  p = TG_FMAF(p, r, 0x1.c6af7ap-5f);
  p = TG_FMAF(p, r, 0x1.ebfbdcp-3f);
  p = TG_FMAF(p, r, 0x1.62e430p-1f);
  p = TG_FMAF(p, r, 1.0f);
  return tg_self(out, tg_exp_beyond(x), tg_scaled(p, t));
}

/* e^x = 2^n e^r with n = round(x log2(e)) and r = x - n ln2, exact to float precision as ln2 is split in a 16-bit
   high part (n ln2_hi exact for |n| <= 150) and the rest, so the error does not grow with |x| as 2^(x log2(e))
   rounded does; for |x| <= 104. n comes from one multiply-add: any integer n near x log2(e) keeps the reduction
   exact. e^r is a polynomial in r itself (1 + r + r^2 q(r)), not 2^(r log2(e)): a multiply fewer and its rounding
   gone (0.91 ulp at most where it was 1.07; softmax over 4096 x 1024 floats 1880 -> 1750 us as AVX2 code, 1380 ->
   1270 on AVX-512, with tg_scaled's and the signed comparison's operations saved) */
TG_INLINE float tg_expf(float x) {
  uint32_t ix = tg_fbits(x);
  int out = (int32_t)(ix & 0x7fffffffu) > 0x42d00000;
  float c = tg_ffrom(tg_sel(out, 0u, ix));
  float t = TG_FMAF(c, 0x1.715476p0f, 0x1.8p23f), n = t - 0x1.8p23f;
  float r = TG_FMAF(-n, 0x1.62e4p-1f, c);
  r = TG_FMAF(-n, 0x1.7f7d1cp-20f, r);
  float p = 0x1.6a23a8p-10f;
  p = TG_FMAF(p, r, 0x1.123a36p-7f);
  p = TG_FMAF(p, r, 0x1.5558f4p-5f);
  p = TG_FMAF(p, r, 0x1.555490p-3f);
  p = TG_FMAF(p, r, 0x1.fffffcp-2f);
  p = TG_FMAF(p, r, 1.0f);
  p = TG_FMAF(p, r, 1.0f);
  return tg_self(out, tg_exp_beyond(x), tg_scaled(p, t));
}

/* f with x = 2^e (1 + f), 1 + f in [sqrt(1/2), sqrt(2)), and e as a float in *ef: a subnormal x scaled by 2^23 first
   (its e less 23); what tg_log2f and tg_logf reduce x to */
TG_INLINE float tg_log_split(float x, float *ef) {
  uint32_t ix = tg_fbits(x), sub = ix < 0x00800000u, iy = tg_fbits(tg_self(sub, x * 0x1p23f, x));
  int32_t e = (int32_t)(iy - 0x3f3504f3u) >> 23;
  *ef = (float)(e - (int32_t)(-sub & 23u));
  return tg_ffrom(iy - ((uint32_t)e << 23)) - 1.0f;
}

/* a logarithm's res for x's bits ix, but for its special values: inf, NaN, NaN for x < 0, -inf for either zero (ef is
   tg_log_split's) */
TG_INLINE float tg_log_special(uint32_t ix, float ef, float res) {
  res = tg_self(ix >= 0x7f800000u, tg_ffrom(ix | (0x7fc00000u & -(ix >> 31))), res);
  return tg_self(ix << 1 == 0, ef - INFINITY, res);
}

/* log2(2^e (1 + f)) with 1 + f in [sqrt(1/2), sqrt(2)): e + f log2(e) + f^2 q(f), where f_hi log2(e)_hi (12 bits
   each) is exact and e + that sum is added exactly (Fast2Sum), so only the small terms round */
TG_INLINE float tg_log2f(float x) {
  uint32_t ix = tg_fbits(x);
  float ef, f = tg_log_split(x, &ef);
  float fh = tg_ffrom(tg_fbits(f) & 0xfffff000u), fl = f - fh;
  float q = -0x1.c3a1cap-4f;
  q = TG_FMAF(q, f, 0x1.7f1fc8p-3f);
  q = TG_FMAF(q, f, -0x1.87f2ecp-3f);
  q = TG_FMAF(q, f, 0x1.a2caaap-3f);
  q = TG_FMAF(q, f, -0x1.eaa2dcp-3f);
  q = TG_FMAF(q, f, 0x1.277f42p-2f);
  q = TG_FMAF(q, f, -0x1.715afcp-2f);
  q = TG_FMAF(q, f, 0x1.ec7094p-2f);
  q = TG_FMAF(q, f, -0x1.71547p-1f);
  float hi = fh * 0x1.716p0f, lo = (fl * 0x1.716p0f + f * -0x1.7135a8p-13f) + f * f * q;
  float s = ef + hi, res = s + (((ef - s) + hi) + lo);
  return tg_log_special(ix, ef, res);
}

/* log(2^e (1 + f)) with 1 + f in [sqrt(1/2), sqrt(2)): e ln2 + f + f^2 p(f), where e ln2_hi (16 bits of ln2, 8 of e) is
   exact and e ln2_hi + f is added exactly (Fast2Sum: |e ln2_hi| >= |f| unless e = 0), so only the small terms round;
   special values as tg_log2f's. log(x) as log2(x) ln2 was within 1.57 ulp, this within 0.86 (with or without fma),
   a multiply and log2's split of f fewer */
TG_INLINE float tg_logf(float x) {
  uint32_t ix = tg_fbits(x);
  float ef, f = tg_log_split(x, &ef);
  float p = -0x1.3830f4p-4f;
  p = TG_FMAF(p, f, 0x1.0848b8p-3f);
  p = TG_FMAF(p, f, -0x1.0f3762p-3f);
  p = TG_FMAF(p, f, 0x1.22718cp-3f);
  p = TG_FMAF(p, f, -0x1.54276cp-3f);
  p = TG_FMAF(p, f, 0x1.99a3f4p-3f);
  p = TG_FMAF(p, f, -0x1.000426p-2f);
  p = TG_FMAF(p, f, 0x1.555550p-2f);
  p = TG_FMAF(p, f, -0x1.fffff8p-2f);
  float a = ef * 0x1.62e4p-1f, s = a + f, res = s + (((a - s) + f) + TG_FMAF(ef, 0x1.7f7d1cp-20f, f * f * p));
  return tg_log_special(ix, ef, res);
}

/* w ^ the differences d1..du (a chain of selects would become a table) */
TG_INLINE uint32_t tg_2opi_word(uint32_t u, uint32_t w, uint32_t d1, uint32_t d2, uint32_t d3, uint32_t d4) {
  return w ^ (d1 & -(uint32_t)(u >= 1u)) ^ (d2 & -(uint32_t)(u >= 2u)) ^ (d3 & -(uint32_t)(u >= 3u))
           ^ (d4 & -(uint32_t)(u >= 4u));
}

/* sin(x + q pi/2): |x| = n pi/2 + r with |r| <= pi/4, from y = |x| 2/pi mod 4 in 2.62 fixed point. |x| is
   m 2^(e - 150) with a 24-bit m, so only the bits of 2/pi from position e - 151 on reach y (the bit of weight 2^-i at
   position i): 128 of them, from the multiple of 32 below, times m shifted left by the rest */
TG_INLINE float tg_sincosf(float x, uint32_t q) {
  uint32_t ix = tg_fbits(x), ax = ix & 0x7fffffffu, e = tg_sel(ax < 0x3f000000u, 126u, ax >> 23);
  uint32_t u = (e - 119u) >> 5;
  uint64_t xm = (uint64_t)((ax & 0x7fffffu) | 0x800000u) << ((e - 119u) & 31u), h = xm >> 32, l = (uint32_t)xm;
TG_2OPI_WORDS
  uint64_t y = ((uint64_t)(uint32_t)(l * w0 + h * w1) << 32) + l * w1 + h * w2 + (l * w2 >> 32) + (h * w3 >> 32);
  uint64_t n = (y + (1ull << 61)) >> 62, d = y - (n << 62), neg = d >> 63, a = (d ^ -neg) + neg;
  double r = (tg_dfrom(0x4330000000000000ull | a >> 32) - 0x1p52) * 0x1p32;   /* (double)a, which x86 vectors convert */
  r += tg_dfrom(0x4330000000000000ull | (uint32_t)a) - 0x1p52;                 /* from AVX-512 on only */
  int small = ax < 0x3f490fdbu;
  r = tg_seld(small, (double)tg_ffrom(ax), tg_dfrom(tg_dbits(r * 0x1.921fb54442d18p-62) ^ neg << 63));
  n = (n & -(uint64_t)!small) ^ -(uint64_t)(ix >> 31);
  r = tg_dfrom(tg_dbits(r) ^ (uint64_t)(ix >> 31) << 63);
  n = n + (ix >> 31) + q;
  double r2 = r * r;
  double s = -0x1.a00f74543e64cp-13 + r2 * 0x1.6ccf5bcec6fb4p-19;
  s = r * (1.0 + r2 * (-0x1.5555554c5f56cp-3 + r2 * (0x1.1111085cf4704p-7 + r2 * s)));
  double c = -0x1.6c07e1ed5486ap-10 + r2 * 0x1.9912fb96879a1p-16;
  c = 1.0 + r2 * (-0x1.ffffffcb13972p-2 + r2 * (0x1.55553c515ce38p-5 + r2 * c));
  double v = tg_seld((int)(n & 1u), c, s);
  v = tg_dfrom(tg_dbits(v) ^ (n & 2u) << 62);
  return tg_self(ax >= 0x7f800000u, x - x, (float)v);
}
TG_INLINE float tg_sinf(float x) { return tg_sincosf(x, 0); }
TG_INLINE float tg_cosf(float x) { return tg_sincosf(x, 1); }
""".replace("TG_2OPI_WORDS\n", _words())
