/* The polynomials of compute/fastmath.h, written once and included twice: with GF_MADD(a, x, b) a multiply
 * and an add (the fp32 default: gf_exp_fast, gf_erf_fast, gf_tanh_fast, bit for bit what they always were)
 * and with one fused multiply-add (--precision fp32-fast: gf_exp_fast_fma, ...). No include guard, by
 * design; only compute/fastmath.h includes it. */

/* An exp for the loops that dominate the softmax over a large vocabulary. For x <= 88 it matches
 * expf within about 2 ulp (Cody-Waite reduction to [-ln2/2, ln2/2], degree-7 Taylor polynomial, whose
 * truncation error 0.347^8/8! = 5e-9 is below float rounding); below -87.3 it returns ~1e-38 instead of
 * a denormal or zero, which no softmax sum can tell apart. Held to expf by tests/unit/test_ops.c. */
#pragma omp declare simd notinbranch
static inline float GF_FAST_NAME(gf_exp_fast)(float x) {
    x = GF_SELECT(x < -87.3f, -87.3f, x);
    x = GF_SELECT(x > 88.3f, 88.3f, x);
    const float k = __builtin_rintf(x * 1.44269504088896341f);
    const float r = GF_MADD(-k, 1.42860682030941723e-6f, GF_MADD(-k, 0.693145751953125f, x)); /* ln2 split hi + lo */
    float p = 1.0f / 5040.0f;
    p = GF_MADD(p, r, 1.0f / 720.0f);
    p = GF_MADD(p, r, 1.0f / 120.0f);
    p = GF_MADD(p, r, 1.0f / 24.0f);
    p = GF_MADD(p, r, 1.0f / 6.0f);
    p = GF_MADD(p, r, 0.5f);
    p = GF_MADD(p, r, 1.0f);
    p = GF_MADD(p, r, 1.0f);
    /* 2^k, k in [-126, 127]; a NaN x (whose p is NaN) takes 2^0: converting a NaN k to an integer is undefined
     * (UBSan saw the shift of INT_MIN + 127). A blend in every set, which changes no other value, nor what the
     * compiler vectorises: in the default set the clamps above still decide that. */
    const int32_t bits = ((int32_t)gf_select_bits(k == k, k, 0.0f) + 127) << 23;
    float two_k;
    memcpy(&two_k, &bits, sizeof two_k);
    return p * two_k;
}

/* A vectorisable erf for GELU, forward and backward. Two branch-free ranges blended by a select:
 * |x| < 1: erf(x) = x P(x^2) (degree 7); 1 <= |x| < 3.9: erf(x) = 1 - exp(-x^2) Q(x) (degree 12 in
 * u = (x - 2.5)/1.5); beyond, erf = +-1 in float (erfc(3.9) = 3.5e-8). The coefficients are our own
 * least-squares fits in double (scripts/fit_erf.py). Max abs error 1.5e-7 against double erf, held by
 * tests/unit/test_ops.c; GELU needs erf's absolute error, since it uses 0.5 x (1 + erf). */
#pragma omp declare simd notinbranch
static inline float GF_FAST_NAME(gf_erf_fast)(float x) {
    const float ax = __builtin_fabsf(x);
    const float s = ax * ax;
    float pa = -9.808486783429481e-06f;
    pa = GF_MADD(pa, s, 1.1312874634856774e-04f);
    pa = GF_MADD(pa, s, -8.490166253609365e-04f);
    pa = GF_MADD(pa, s, 5.2214211940257455e-03f);
    pa = GF_MADD(pa, s, -2.6865557812952995e-02f);
    pa = GF_MADD(pa, s, 1.1283784455377889e-01f);
    pa = GF_MADD(pa, s, -3.761263858035847e-01f);
    pa = GF_MADD(pa, s, 1.1283791670719423f);
    const float ea = ax * pa;
    const float u = (ax - 2.5f) * (1.0f / 1.5f);
    float q = 1.3584280843359406e-05f;
    q = GF_MADD(q, u, -3.627110403480615e-05f);
    q = GF_MADD(q, u, 5.5606106459927404e-05f);
    q = GF_MADD(q, u, -1.4562891076346876e-04f);
    q = GF_MADD(q, u, 4.138196781707037e-04f);
    q = GF_MADD(q, u, -1.0155697859544066e-03f);
    q = GF_MADD(q, u, 2.402030399161768e-03f);
    q = GF_MADD(q, u, -5.567950219035787e-03f);
    q = GF_MADD(q, u, 1.2489633483468966e-02f);
    q = GF_MADD(q, u, -2.7005626170492233e-02f);
    q = GF_MADD(q, u, 5.6110477990893734e-02f);
    q = GF_MADD(q, u, -1.1152100907205745e-01f);
    q = GF_MADD(q, u, 2.1080636420966675e-01f);
    const float eb = 1.0f - GF_FAST_NAME(gf_exp_fast)(-s) * q;
    float e = GF_SELECT(ax < 1.0f, ea, eb);
    e = GF_SELECT(ax < 3.9f, e, 1.0f);
    return GF_SELECT(x < 0.0f, -e, e);
}

/* tanh from the vectorisable exp: 1 - 2/(1 + e^(2x)), absolute error ~1e-7 (used by tanh GELU). */
#pragma omp declare simd notinbranch
static inline float GF_FAST_NAME(gf_tanh_fast)(float x) {
    x = GF_SELECT(x > 44.0f, 44.0f, x);
    return 1.0f - 2.0f / (1.0f + GF_FAST_NAME(gf_exp_fast)(2.0f * x));
}

/* tanh with a relative error of a few ulp at every x (the recurrent cells' and additive attention's, whose
 * arguments sit near 0 as often as not, where gf_tanh_fast's 1 - 2/(1 + e^(2x)) keeps only its absolute error):
 * for |x| < 0.3 its Taylor series x + x^3 P(x^2) to x^11 (the next term, 21844/6081075 x^13, is below 2e-9 x
 * there), beyond it 1 - 2/(1 + e^(2|x|)) with x's sign (its cancellation costs at most 1/tanh(0.3) = 3.4 ulp).
 * Held to double tanh by tests/unit/test_ops.c. */
#pragma omp declare simd notinbranch
static inline float GF_FAST_NAME(gf_tanh_rel)(float x) {
    const float ax = __builtin_fabsf(x), s = x * x;
    float p = -1382.0f / 155925.0f;
    p = GF_MADD(p, s, 62.0f / 2835.0f);
    p = GF_MADD(p, s, -17.0f / 315.0f);
    p = GF_MADD(p, s, 2.0f / 15.0f);
    p = GF_MADD(p, s, -1.0f / 3.0f);
    const float small = GF_SELECT(ax == 0.0f, x, GF_MADD(x * s, p, x)); /* x + (+0) would lose -0's sign */
    const float big = 1.0f - 2.0f / (1.0f + GF_FAST_NAME(gf_exp_fast)(2.0f * GF_SELECT(ax > 44.0f, 44.0f, ax)));
    return GF_SELECT(ax < 0.3f, small, GF_SELECT(x < 0.0f, -big, big));
}
