/* Which implementations oneDNN offers for an fp32 matmul on this CPU, in its order of preference
 * (docs/bench/method.md, "fp32 matmuls": grassflow uses brgemm ones only). Build and run:
 *   cc bench/dnnl_impls.c -o /tmp/dnnl_impls -ldnnl && /tmp/dnnl_impls
 *   ONEDNN_MAX_CPU_ISA=AVX2 /tmp/dnnl_impls          # as on a CPU with AVX2 and no AVX-512
 * Debian 12's oneDNN 2.6.3 on the AVX-512 EPYC: brg:avx512_core, gemm:jit, ref:any; limited to AVX2:
 * gemm:jit, ref:any (no brgemm matmul below AVX-512 in 2.6). */
#include <dnnl.h>
#include <stdio.h>

int main(void) {
    dnnl_engine_t eng;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success) return 1;
    dnnl_memory_desc_t a, b, c;
    dnnl_dims_t da = {4096, 256}, db = {256, 1024}, dc = {4096, 1024}; /* a d = 256 FFN's first matmul */
    dnnl_memory_desc_init_by_tag(&a, 2, da, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&b, 2, db, dnnl_f32, dnnl_ab);
    dnnl_memory_desc_init_by_tag(&c, 2, dc, dnnl_f32, dnnl_ab);
    dnnl_matmul_desc_t d;
    dnnl_matmul_desc_init(&d, &a, &b, NULL, &c);
    dnnl_primitive_desc_iterator_t it;
    if (dnnl_primitive_desc_iterator_create(&it, &d, NULL, eng, NULL) != dnnl_success) {
        puts("no implementation");
        return 1;
    }
    printf("oneDNN %d.%d.%d, fp32 matmul 4096 x 1024 x 256:", dnnl_version()->major, dnnl_version()->minor,
           dnnl_version()->patch);
    do {
        dnnl_primitive_desc_t p = dnnl_primitive_desc_iterator_fetch(it);
        const char *name = "?";
        dnnl_primitive_desc_query(p, dnnl_query_impl_info_str, 0, &name);
        printf(" %s", name);
        dnnl_primitive_desc_destroy(p);
    } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
    printf("\n");
    dnnl_primitive_desc_iterator_destroy(it);
    dnnl_engine_destroy(eng);
    return 0;
}
