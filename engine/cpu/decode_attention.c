/* Decode attention over a paged float32 KV cache: one query token per sequence.

   The new keys and values are stored at their slots first; then for each sequence t and query
   head h, out = softmax(q·Kᵀ·scale)·V over the sequence's first lens[t] cache positions, read
   through its block table. Query heads that share a KV head (GQA) are done together, so each
   key and value row is read once per step. Two passes per head: scores, then the weighted sum. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void decode_attention(int T, int H, int KVH, int D, const float *q, const float *k, const float *v, float *k_cache,
                      float *v_cache, int block_size, const int64_t *slots, const int64_t *tables, int table_width,
                      const int32_t *lens, float scale, float *out) {
    const size_t row = (size_t)KVH * D; /* floats per cache slot */
    for (int t = 0; t < T; t++) {
        memcpy(k_cache + slots[t] * row, k + t * row, sizeof(float) * row);
        memcpy(v_cache + slots[t] * row, v + t * row, sizeof(float) * row);
    }
    const int G = H / KVH;
#pragma omp parallel for schedule(dynamic, 1)
    for (int task = 0; task < T * KVH; task++) {
        const int t = task / KVH, kh = task % KVH, n = lens[t];
        const int64_t *table = tables + (size_t)t * table_width;
        float *scores = malloc(sizeof(float) * (size_t)n * G);
        for (int j = 0; j < n; j++) {
            const float *kr = k_cache + ((size_t)table[j / block_size] * block_size + j % block_size) * row + kh * D;
            for (int g = 0; g < G; g++) {
                const float *qr = q + ((size_t)t * H + kh * G + g) * D;
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
            float *o = out + ((size_t)t * H + kh * G + g) * D;
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
}
