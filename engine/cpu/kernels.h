/* What the engine's CPU kernels share: the weights' and activations' layouts (quantized.c),
   and the pieces of decode attention (decode_attention.c) that decode_layers.c strings together. */
#include <stdint.h>

enum { GROUP = 32, BLOCK = 128, TILE = 8 };
enum { PROLOGUE_NONE = 0, PROLOGUE_RMSNORM = 1, PROLOGUE_SWIGLU = 2 };

/* A 4-bit projection: codes in quantized.c's layout, float16 scale d and offset m per group. */
typedef struct {
    const uint8_t *codes;
    const uint16_t *d, *m;
    const float *bias; /* or NULL */
    int in_features, out_features;
} Q4;

/* An 8-bit projection: codes (out, in), float16 scale d and c = -128·d·Σq per group. */
typedef struct {
    const int8_t *codes;
    const uint16_t *d;
    const float *c;
    int in_features, out_features;
} Q8;

/* Rows of activations rounded to int8 per group of 32: codes, scale and plain sum per group. */
typedef struct {
    int8_t *q;
    float *d, *s;
} Quantized;

Quantized quantized_alloc(int rows, int in_features);
void quantized_free(Quantized x);
/* f(x) for T rows (the prologue), rounded; interleave: in the 4-bit kernel's order. scratch: in floats. */
void quantize_rows(int T, const float *x, int x_stride, int in, int prologue, const float *norm_w, float eps,
                   int interleave, const Quantized *out, float *scratch);
/* y (+)= x Wᵀ + b for T rows. A worksharing loop: call it from every thread of a parallel region. */
void q4_product(const Q4 *w, int T, const Quantized *x, float *y, int y_stride, int add);

/* The paged cache holds float32, or bfloat16 where bf16 is set. */
void store_kv(int T, int row, const float *k, const float *v, int stride, void *k_cache, void *v_cache,
              const int64_t *slots, int bf16);
/* One sequence, one KV head and the query heads that share it: out_row (H·D) gets their attention
   over the first n cache positions of the block table. */
void attend(int kh, int H, int KVH, int D, const float *q_row, const void *k_cache, const void *v_cache,
            int block_size, const int64_t *table, int n, float scale, float *out_row, int bf16);
