/* Decode attention over a paged float32 KV cache: one query token per sequence.

   The new keys and values are stored at their slots first; then for each sequence t and query
   head h, out = softmax(q·Kᵀ·scale)·V over the sequence's first lens[t] cache positions, read
   through its block table. Query heads that share a KV head (GQA) are done together, so each
   key and value row is read once per step. Two passes per head: scores, then the weighted sum. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

void store_kv(int T, int row, const float *k, const float *v, int stride, float *k_cache, float *v_cache,
              const int64_t *slots) {
    for (int t = 0; t < T; t++) {
        memcpy(k_cache + slots[t] * row, k + (size_t)t * stride, sizeof(float) * row);
        memcpy(v_cache + slots[t] * row, v + (size_t)t * stride, sizeof(float) * row);
    }
}

void attend(int kh, int H, int KVH, int D, const float *q_row, const float *k_cache, const float *v_cache,
            int block_size, const int64_t *table, int n, float scale, float *out_row) {
    const size_t row = (size_t)KVH * D; /* floats per cache slot */
    const int G = H / KVH;
    float *scores = malloc(sizeof(float) * (size_t)n * G);
    for (int j = 0; j < n; j++) {
        const float *kr = k_cache + ((size_t)table[j / block_size] * block_size + j % block_size) * row + kh * D;
        for (int g = 0; g < G; g++) {
            const float *qr = q_row + (size_t)(kh * G + g) * D;
            float s = 0;
#pragma omp simd reduction(+ : s)
            for (int d = 0; d < D; d++) s += qr[d] * kr[d];
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
            const float *vr = v_cache + ((size_t)table[j / block_size] * block_size + j % block_size) * row + kh * D;
            const float p = sc[j] / sum;
#pragma omp simd
            for (int d = 0; d < D; d++) o[d] += p * vr[d];
        }
    }
    free(scores);
}

void decode_attention(int T, int H, int KVH, int D, const float *q, const float *k, const float *v, float *k_cache,
                      float *v_cache, int block_size, const int64_t *slots, const int64_t *tables, int table_width,
                      const int32_t *lens, float scale, float *out) {
    store_kv(T, KVH * D, k, v, KVH * D, k_cache, v_cache, slots);
#pragma omp parallel for schedule(dynamic, 1)
    for (int task = 0; task < T * KVH; task++) {
        const int t = task / KVH;
        attend(task % KVH, H, KVH, D, q + (size_t)t * H * D, k_cache, v_cache, block_size,
               tables + (size_t)t * table_width, lens[t], scale, out + (size_t)t * H * D);
    }
}
