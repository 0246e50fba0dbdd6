/* Every layer of a decode step in one call, for up to TILE rows with 4-bit projections:

       x += o(attention(RoPE(qkv(RMSNorm(x)))));  x += down(SiLU·up(gate_up(RMSNorm(x))))

   One parallel region for the whole step: the threads split each projection's rows and the
   attention's (row, KV head) pairs, and one thread does the small serial parts (rounding a
   projection's input, RoPE, storing K/V) while the others wait at the barrier. Done op by op
   from Python, a step is about 180 calls, each with its own fork and join. */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"

typedef struct {
    const float *attn_norm, *mlp_norm;
    Q4 qkv, o, gate_up, down;
} Layer;

/* rotate_half RoPE in place on `heads` heads of D per row; sin carries rotate_half's sign.
   Rounded as torch's addcmul(x·cos, rotate_half(x), sin) rounds (model.apply_rope): the
   op-by-op path gets the same bits, and so rounds the activations to 8 bits alike. */
static void rope(int T, float *x, int stride, int heads, int D, const float *cos, const float *sin) {
    const int half = D / 2;
    for (int t = 0; t < T; t++)
        for (int h = 0; h < heads; h++) {
            float *p = x + (size_t)t * stride + (size_t)h * D;
            const float *c = cos + (size_t)t * D, *s = sin + (size_t)t * D;
            for (int i = 0; i < half; i++) {
                const float a = p[i], b = p[i + half];
                p[i] = fmaf(b, s[i], a * c[i]);
                p[i + half] = fmaf(a, s[i + half], b * c[i + half]);
            }
        }
}

static int max3(int a, int b, int c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

void decode_layers(int n_layers, const Layer *layers, int T, float *x, int H, int KVH, int D, float eps,
                   const float *cos, const float *sin, void *k_cache, void *v_cache, int kv_bf16, int64_t layer_stride,
                   int block_size, const int64_t *slots, const int64_t *tables, int table_width,
                   const int32_t *lens, float scale) {
    const int hidden = layers[0].qkv.in_features, inter = layers[0].down.in_features;
    const int q_dim = H * D, qkv_dim = (H + 2 * KVH) * D;
    const int widest = max3(hidden, q_dim, inter);
    Quantized q = quantized_alloc(T, widest);
    float *scratch = malloc(sizeof(float) * widest), *qkv = malloc(sizeof(float) * (size_t)T * qkv_dim);
    float *attn = malloc(sizeof(float) * (size_t)T * q_dim), *gate_up = malloc(sizeof(float) * (size_t)T * 2 * inter);
#pragma omp parallel
    for (int l = 0; l < n_layers; l++) {
        const Layer *L = layers + l;
        /* this layer's cache, layer_stride elements of 4 or 2 bytes in */
        const size_t at = (size_t)l * layer_stride * (kv_bf16 ? 2 : 4);
        void *kc = (char *)k_cache + at, *vc = (char *)v_cache + at;
#pragma omp single
        quantize_rows(T, x, hidden, hidden, PROLOGUE_RMSNORM, L->attn_norm, eps, 1, &q, scratch);
        q4_product(&L->qkv, T, &q, qkv, qkv_dim, 0);
#pragma omp single
        {
            rope(T, qkv, qkv_dim, H + KVH, D, cos, sin);
            store_kv(T, KVH * D, qkv + q_dim, qkv + q_dim + KVH * D, qkv_dim, kc, vc, slots, kv_bf16);
        }
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < T * KVH; task++) {
            const int t = task / KVH;
            attend(task % KVH, H, KVH, D, qkv + (size_t)t * qkv_dim, kc, vc, block_size,
                   tables + (size_t)t * table_width, lens[t], scale, attn + (size_t)t * q_dim, kv_bf16);
        }
#pragma omp single
        quantize_rows(T, attn, q_dim, q_dim, PROLOGUE_NONE, NULL, 0, 1, &q, scratch);
        q4_product(&L->o, T, &q, x, hidden, 1);
#pragma omp single
        quantize_rows(T, x, hidden, hidden, PROLOGUE_RMSNORM, L->mlp_norm, eps, 1, &q, scratch);
        q4_product(&L->gate_up, T, &q, gate_up, 2 * inter, 0);
#pragma omp single
        quantize_rows(T, gate_up, 2 * inter, inter, PROLOGUE_SWIGLU, NULL, 0, 1, &q, scratch);
        q4_product(&L->down, T, &q, x, hidden, 1);
    }
    free(scratch);
    free(qkv);
    free(attn);
    free(gate_up);
    quantized_free(q);
}
