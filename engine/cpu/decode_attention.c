/* Decode attention over a paged KV cache of float32 or bfloat16: one query token per sequence.

   The new keys and values are stored at their slots first (rounded to nearest even for a
   bfloat16 cache, as torch rounds); then for each sequence t and query
   head h, out = softmax(q·Kᵀ·scale)·V over the sequence's first lens[t] cache positions, read
   through its block table. Query heads that share a KV head (GQA) are done together, so each
   key and value row is read once per step. Two passes per head: scores, then the weighted sum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

static inline uint16_t to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

static inline float from_bf16(uint16_t h) {
    const uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

void store_kv(int T, int row, const float *k, const float *v, int stride, void *k_cache, void *v_cache,
              const int64_t *slots, int bf16) {
    for (int t = 0; t < T; t++) {
        const float *kr = k + (size_t)t * stride, *vr = v + (size_t)t * stride;
        if (!bf16) {
            memcpy((float *)k_cache + slots[t] * row, kr, sizeof(float) * row);
            memcpy((float *)v_cache + slots[t] * row, vr, sizeof(float) * row);
            continue;
        }
        uint16_t *kc = (uint16_t *)k_cache + slots[t] * row, *vc = (uint16_t *)v_cache + slots[t] * row;
        for (int i = 0; i < row; i++) {
            kc[i] = to_bf16(kr[i]);
            vc[i] = to_bf16(vr[i]);
        }
    }
}

/* The cache's element i as float32, for either dtype (BF16 is a constant where this is inlined). */
#define CACHED(base, i, BF16) ((BF16) ? from_bf16(((const uint16_t *)(base))[i]) : ((const float *)(base))[i])

static inline __attribute__((always_inline)) void attend_as(int kh, int H, int KVH, int D, const float *q_row,
                                                            const void *k_cache, const void *v_cache, int block_size,
                                                            const int64_t *table, int n, float scale, float *out_row,
                                                            int BF16) {
    const size_t row = (size_t)KVH * D; /* elements per cache slot */
    const int G = H / KVH;
    float *scores = malloc(sizeof(float) * (size_t)n * G);
    for (int j = 0; j < n; j++) {
        const size_t kr = ((size_t)table[j / block_size] * block_size + j % block_size) * row + kh * D;
        for (int g = 0; g < G; g++) {
            const float *qr = q_row + (size_t)(kh * G + g) * D;
            float s = 0;
#pragma omp simd reduction(+ : s)
            for (int d = 0; d < D; d++) s += qr[d] * CACHED(k_cache, kr + d, BF16);
            scores[(size_t)g * n + j] = s * scale;
        }
    }
    for (int g = 0; g < G; g++) {
        float *sc = scores + (size_t)g * n, m = -INFINITY, sum = 0;
        for (int j = 0; j < n; j++) m = fmaxf(m, sc[j]);
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < n; j++) {
            sc[j] = expf(sc[j] - m);
            sum += sc[j];
        }
        float *o = out_row + (size_t)(kh * G + g) * D;
        memset(o, 0, sizeof(float) * D);
        for (int j = 0; j < n; j++) {
            const size_t vr = ((size_t)table[j / block_size] * block_size + j % block_size) * row + kh * D;
            const float p = sc[j] / sum;
#pragma omp simd
            for (int d = 0; d < D; d++) o[d] += p * CACHED(v_cache, vr + d, BF16);
        }
    }
    free(scores);
}

void attend(int kh, int H, int KVH, int D, const float *q_row, const void *k_cache, const void *v_cache,
            int block_size, const int64_t *table, int n, float scale, float *out_row, int bf16) {
    if (bf16)
        attend_as(kh, H, KVH, D, q_row, k_cache, v_cache, block_size, table, n, scale, out_row, 1);
    else
        attend_as(kh, H, KVH, D, q_row, k_cache, v_cache, block_size, table, n, scale, out_row, 0);
}

void decode_attention(int T, int H, int KVH, int D, const float *q, const float *k, const float *v, void *k_cache,
                      void *v_cache, int bf16, int block_size, const int64_t *slots, const int64_t *tables,
                      int table_width, const int32_t *lens, float scale, float *out) {
    store_kv(T, KVH * D, k, v, KVH * D, k_cache, v_cache, slots, bf16);
#pragma omp parallel for schedule(dynamic, 1)
    for (int task = 0; task < T * KVH; task++) {
        const int t = task / KVH;
        attend(task % KVH, H, KVH, D, q + (size_t)t * H * D, k_cache, v_cache, block_size,
               tables + (size_t)t * table_width, lens[t], scale, out + (size_t)t * H * D, bf16);
    }
}
