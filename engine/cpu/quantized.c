/* Quantised projections for CPU decode: y = f(x) Wᵀ (+ y), with the weights' own group codes.

   q4_linear: 4-bit codes (the layers' projections). q8_linear: 8-bit codes (the output
   projection, which GGUF files keep at 8 bits: w = d·q, q in -127..127, the Q8_0 form).

   A 4-bit weight row is stored in blocks of 128 inputs (4 groups of 32; 2 at the tail when the
   groups are not a multiple of 4). Its low nibbles hold each group's first 16 codes, its high
   nibbles the last 16, interleaved 4 codes at a time across the block's groups, so that lane i
   of an integer dot product over the block belongs to group i % 4 (see quantize_row for the
   order). Each group of 32 has a float16 scale d and offset m, w = d·q + m, q in 0..15 (the
   GGUF Q4_1 form).

   The activations are quantised per group to int8 (x ≈ dx·xq), as llama.cpp does, so the
   inner product is an integer one (AVX512-VNNI, 64 products per instruction):
       Σ w·x = Σ_g d_g·dx_g·Σ q·xq + m_g·Σ x.
   f(x) is a prologue fused into the quantisation: x itself, RMSNorm(x)·w, or SiLU(gate)·up
   for an input row that holds gate then up. */
#include <immintrin.h>
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

static float hsum(__m512 v) { return _mm512_reduce_add_ps(v); }

/* One row of the projection's input after the prologue, rounded: xq (in int8; with interleave in
   the 4-bit codes' order, described above, else in input order), dx and sx (one per group: the
   scale and the plain sum of the group's values). v is scratch for `in` floats. */
static void quantize_row(const float *x, int in, int prologue, const float *norm_w, float eps, float *v, int8_t *xq,
                         float *dx, float *sx, int interleave) {
    if (prologue == PROLOGUE_RMSNORM) {
        float ss = 0;
#pragma omp simd reduction(+ : ss)
        for (int i = 0; i < in; i++) ss += x[i] * x[i];
        float r = 1.0f / sqrtf(ss / in + eps);
#pragma omp simd
        for (int i = 0; i < in; i++) v[i] = x[i] * r * norm_w[i];
    } else if (prologue == PROLOGUE_SWIGLU) {
#pragma omp simd
        for (int i = 0; i < in; i++) v[i] = x[i] / (1.0f + expf(-x[i])) * x[in + i];
    } else {
#pragma omp simd
        for (int i = 0; i < in; i++) v[i] = x[i];
    }
    const int groups = in / GROUP;
    for (int g = 0; g < groups; g++) {
        const float *p = v + g * GROUP;
        float amax = 0, sum = 0;
#pragma omp simd reduction(max : amax) reduction(+ : sum)
        for (int i = 0; i < GROUP; i++) {
            amax = fmaxf(amax, fabsf(p[i]));
            sum += p[i];
        }
        float d = amax / 127.0f, inv = d > 0 ? 1.0f / d : 0.0f;
        dx[g] = d;
        sx[g] = sum;
        if (!interleave) {
#pragma omp simd
            for (int i = 0; i < GROUP; i++) xq[g * GROUP + i] = (int8_t)lrintf(p[i] * inv);
            continue;
        }
        /* a block of n groups (4, or 2 at the tail): element 16h + 4j + k of its group gi goes to
           byte 16n·h + 4(n·j + gi) + k of the block */
        const int b0 = g / 4 * 4, n = groups - b0 < 4 ? groups - b0 : 4, gi = g - b0;
        int8_t *blk = xq + b0 * GROUP;
        for (int h = 0; h < 2; h++)
            for (int j = 0; j < 4; j++)
                for (int k = 0; k < 4; k++)
                    blk[16 * n * h + 4 * (n * j + gi) + k] = (int8_t)lrintf(p[16 * h + 4 * j + k] * inv);
    }
}

/* Rows [o0, o1) of the product for nt <= TILE input rows. Always inlined with a constant nt
   (see `tile`), so the accumulators stay in registers. In a block of 4 groups, lane i of the
   integer products belongs to group i % 4, for the low nibbles (each group's first 16 inputs)
   and the high ones (the last 16) alike: one scale vector serves both. */
static inline __attribute__((always_inline)) void rows(const Q4 *w, int o0, int o1, int nt, const int8_t *xq,
                                                       const float *dx, const float *sx, float *y, int y_stride,
                                                       int add) {
    const int in = w->in_features;
    const int groups = in / GROUP, full = in / BLOCK;
    const __m512i low = _mm512_set1_epi8(0x0F);
    for (int o = o0; o < o1; o++) {
        const uint8_t *c = w->codes + (size_t)o * (in / 2);
        const uint16_t *dr = w->d + (size_t)o * groups, *mr = w->m + (size_t)o * groups;
        /* the rows a few ahead: the weights come from L3 or memory, once each */
        for (int k = 0; k < in / 2; k += 64) _mm_prefetch((const char *)(c + 4 * (in / 2) + k), _MM_HINT_T0);
        _mm_prefetch((const char *)(dr + 4 * groups), _MM_HINT_T0);
        _mm_prefetch((const char *)(mr + 4 * groups), _MM_HINT_T0);
        __m512 acc[TILE];
        for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
        int g = 0;
        for (int b = 0; b < full; b++, g += 4) {
            __m512i raw = _mm512_loadu_si512(c + b * 64);
            __m512i q0 = _mm512_and_si512(raw, low);
            __m512i q1 = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low);
            __m512 d = _mm512_broadcast_f32x4(_mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)(dr + g))));
            for (int t = 0; t < nt; t++) {
                const int8_t *xr = xq + (size_t)t * in + g * GROUP;
                __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), q0, _mm512_loadu_si512(xr));
                p = _mm512_dpbusd_epi32(p, q1, _mm512_loadu_si512(xr + 64));
                __m512 s = _mm512_mul_ps(d, _mm512_broadcast_f32x4(_mm_loadu_ps(dx + (size_t)t * groups + g)));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), s, acc[t]);
            }
        }
        if (g < groups) { /* a tail of two groups: lane i of 8 belongs to group i % 2 */
            __m256i raw = _mm256_loadu_si256((const __m256i *)(c + full * 64));
            __m256i q0 = _mm256_and_si256(raw, _mm512_castsi512_si256(low));
            __m256i q1 = _mm256_and_si256(_mm256_srli_epi16(raw, 4), _mm512_castsi512_si256(low));
            __m128 d2 = _mm_cvtph_ps(_mm_cvtsi32_si128(*(const int32_t *)(dr + g)));
            __m256 d = _mm256_castpd_ps(_mm256_broadcastsd_pd(_mm_castps_pd(d2)));
            for (int t = 0; t < nt; t++) {
                const int8_t *xr = xq + (size_t)t * in + g * GROUP;
                __m256i p = _mm256_dpbusd_epi32(_mm256_setzero_si256(), q0, _mm256_loadu_si256((const __m256i *)xr));
                p = _mm256_dpbusd_epi32(p, q1, _mm256_loadu_si256((const __m256i *)(xr + 32)));
                __m256 s = _mm256_mul_ps(d, _mm256_castpd_ps(_mm256_broadcast_sd((const double *)(dx + (size_t)t * groups + g))));
                acc[t] = _mm512_add_ps(acc[t], _mm512_castps256_ps512(_mm256_mul_ps(_mm256_cvtepi32_ps(p), s)));
            }
        }
        for (int t = 0; t < nt; t++) {
            const float *sxr = sx + (size_t)t * groups;
            float offset = 0;
            for (int k = 0; k < groups; k++) offset += _cvtsh_ss(mr[k]) * sxr[k];
            float r = hsum(acc[t]) + offset + (w->bias ? w->bias[o] : 0.0f);
            float *out = y + (size_t)t * y_stride + o;
            *out = add ? *out + r : r;
        }
    }
}

#define ROWS(n) rows(w, o0, o1, n, xq, dx, sx, y, y_stride, add)
static void tile(const Q4 *w, int o0, int o1, int nt, const int8_t *xq, const float *dx, const float *sx, float *y,
                 int y_stride, int add) {
    switch (nt) {
    case 1: ROWS(1); break;
    case 2: ROWS(2); break;
    case 3: ROWS(3); break;
    case 4: ROWS(4); break;
    case 5: ROWS(5); break;
    case 6: ROWS(6); break;
    case 7: ROWS(7); break;
    default: ROWS(8); break;
    }
}
#undef ROWS

Quantized quantized_alloc(int rows, int in_features) {
    const size_t groups = (size_t)rows * (in_features / GROUP);
    Quantized x = {aligned_alloc(64, (size_t)rows * in_features + 64), malloc(sizeof(float) * (groups + 4)),
                   malloc(sizeof(float) * groups)};
    return x;
}

void quantized_free(Quantized x) {
    free(x.q);
    free(x.d);
    free(x.s);
}

void quantize_rows(int T, const float *x, int x_stride, int in, int prologue, const float *norm_w, float eps,
                   int interleave, const Quantized *out, float *scratch) {
    const int groups = in / GROUP;
    for (int t = 0; t < T; t++)
        quantize_row(x + (size_t)t * x_stride, in, prologue, norm_w, eps, scratch, out->q + (size_t)t * in,
                     out->d + (size_t)t * groups, out->s + (size_t)t * groups, interleave);
}

void q4_product(const Q4 *w, int T, const Quantized *x, float *y, int y_stride, int add) {
    const int in = w->in_features, groups = in / GROUP, out = w->out_features;
    for (int t0 = 0; t0 < T; t0 += TILE) {
        const int nt = T - t0 < TILE ? T - t0 : TILE;
        /* 16 rows a chunk, so no two threads write one cache line; static: each thread a contiguous range */
#pragma omp for schedule(static)
        for (int o0 = 0; o0 < out; o0 += 16)
            tile(w, o0, o0 + 16 < out ? o0 + 16 : out, nt, x->q + (size_t)t0 * in, x->d + (size_t)t0 * groups,
                 x->s + (size_t)t0 * groups, y + (size_t)t0 * y_stride, y_stride, add);
    }
}

/* y (T rows, y_stride apart) = f(x) Wᵀ + bias, or y += that when add is set. in is a multiple of 64. */
void q4_linear(int T, const float *x, int x_stride, int prologue, const float *norm_w, float eps, const Q4 *w,
               float *y, int y_stride, int add) {
    Quantized q = quantized_alloc(T, w->in_features);
    float *scratch = malloc(sizeof(float) * w->in_features);
    quantize_rows(T, x, x_stride, w->in_features, prologue, norm_w, eps, 1, &q, scratch);
#pragma omp parallel
    q4_product(w, T, &q, y, y_stride, add);
    free(scratch);
    quantized_free(q);
}

/* Rows [o0, o1) of an 8-bit product for nt <= TILE input rows. The kernel's unsigned operand is
   the activations shifted by 128 (xq ^ 0x80 = xq + 128), so Σ q·xq = Σ q·(xq + 128) - 128·Σ q,
   and the weights carry c = -128·d·Σ q per group. */
static inline __attribute__((always_inline)) void rows8(const Q8 *w, int o0, int o1, int nt, const int8_t *xq,
                                                        const float *dx, float *y, int y_stride) {
    const int in = w->in_features;
    const int groups = in / GROUP;
    const __m512i flip = _mm512_set1_epi8((char)0x80);
    const __m512i lanes = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
    for (int o = o0; o < o1; o++) {
        const int8_t *wr = w->codes + (size_t)o * in;
        const uint16_t *dr = w->d + (size_t)o * groups;
        const float *cr = w->c + (size_t)o * groups;
        _mm_prefetch((const char *)(wr + 4 * in), _MM_HINT_T0);
        __m512 acc[TILE];
        for (int t = 0; t < nt; t++) acc[t] = _mm512_setzero_ps();
        for (int g = 0; g < groups; g += 2) {
            __m512i q = _mm512_loadu_si512(wr + g * GROUP);
            __m128 d = _mm_cvtph_ps(_mm_cvtsi32_si128(*(const int32_t *)(dr + g)));
            for (int t = 0; t < nt; t++) {
                __m512i u = _mm512_xor_si512(_mm512_loadu_si512(xq + (size_t)t * in + g * GROUP), flip);
                __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u, q);
                __m128 s = _mm_mul_ps(d, _mm_castpd_ps(_mm_load_sd((const double *)(dx + (size_t)t * groups + g))));
                acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_permutexvar_ps(lanes, _mm512_castps128_ps512(s)),
                                         acc[t]);
            }
        }
        for (int t = 0; t < nt; t++) {
            const float *dxr = dx + (size_t)t * groups;
            float offset = 0;
            for (int k = 0; k < groups; k++) offset += cr[k] * dxr[k];
            y[(size_t)t * y_stride + o] = hsum(acc[t]) + offset;
        }
    }
}

#define ROWS8(n) rows8(w, o0, o1, n, xq, dx, y, y_stride)
static void tile8(const Q8 *w, int o0, int o1, int nt, const int8_t *xq, const float *dx, float *y, int y_stride) {
    switch (nt) {
    case 1: ROWS8(1); break;
    case 2: ROWS8(2); break;
    case 3: ROWS8(3); break;
    case 4: ROWS8(4); break;
    case 5: ROWS8(5); break;
    case 6: ROWS8(6); break;
    case 7: ROWS8(7); break;
    default: ROWS8(8); break;
    }
}
#undef ROWS8

/* y (T rows, y_stride apart) = RMSNorm(x)·norm_w Wᵀ with 8-bit W; in is a multiple of 64. */
void q8_linear(int T, const float *x, int x_stride, const float *norm_w, float eps, const Q8 *w, float *y,
               int y_stride) {
    const int in = w->in_features, groups = in / GROUP, out = w->out_features;
    Quantized q = quantized_alloc(T, in);
    float *scratch = malloc(sizeof(float) * in);
    quantize_rows(T, x, x_stride, in, PROLOGUE_RMSNORM, norm_w, eps, 0, &q, scratch);
#pragma omp parallel
    for (int t0 = 0; t0 < T; t0 += TILE) {
        const int nt = T - t0 < TILE ? T - t0 : TILE;
#pragma omp for schedule(static)
        for (int o0 = 0; o0 < out; o0 += 16)
            tile8(w, o0, o0 + 16 < out ? o0 + 16 : out, nt, q.q + (size_t)t0 * in, q.d + (size_t)t0 * groups,
                  y + (size_t)t0 * y_stride, y_stride);
    }
    free(scratch);
    quantized_free(q);
}
