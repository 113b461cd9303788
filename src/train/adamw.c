/* AdamW with moments in two flat arenas parallel to the parameter arena (torch.optim.AdamW semantics:
 * decoupled weight decay applied before the moment update, bias-corrected step). */
#include <math.h>
#include <stdlib.h>

#include "compute/parallel.h"
#include "base/error.h"
#include "base/mem.h"
#include "grassflow_plugin.h"

struct gf_adamw {
    gf_adamw_hparams hp;
    int64_t n;
    float *m, *v;
    int64_t t;
};

gf_adamw_hparams gf_adamw_hparams_default(void) {
    return (gf_adamw_hparams){.lr = 6e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f};
}

gf_adamw *gf_adamw_create(const gf_model *model, gf_adamw_hparams hp) {
    gf_adamw *o = calloc(1, sizeof *o);
    if (!o) {
        gf_fail("out of memory creating the optimizer");
        return NULL;
    }
    o->hp = hp;
    o->n = gf_model_num_trainable(model);
    o->m = gf_alloc_floats(o->n, "AdamW first moments");
    o->v = o->m ? gf_alloc_floats(o->n, "AdamW second moments") : NULL;
    if (!o->v) {
        gf_adamw_free(o);
        return NULL;
    }
    return o;
}

void gf_adamw_free(gf_adamw *o) {
    if (!o) return;
    gf_free(o->m);
    gf_free(o->v);
    free(o);
}

int64_t gf_adamw_steps_taken(const gf_adamw *o) { return o->t; }
float *gf_adamw_m(gf_adamw *o) { return o->m; }
float *gf_adamw_v(gf_adamw *o) { return o->v; }
void gf_adamw_set_steps(gf_adamw *o, int64_t t) { o->t = t; }

int gf_adamw_step(gf_adamw *o, gf_model *model, float lr) {
    if (gf_model_num_trainable(model) != o->n)
        return gf_fail("AdamW step: the optimizer holds moments for %lld trainable parameters, the model has %lld "
                       "now (tensors frozen after gf_adamw_create, or another model)\nHINT: freeze before creating "
                       "the optimizer", (long long)o->n, (long long)gf_model_num_trainable(model));
    if (!gf_model_grads(model)) return -1; /* no arena and none can be had: gf_last_error says why */
    o->t++;
    const float b1 = o->hp.beta1, b2 = o->hp.beta2, eps = o->hp.eps;
    const double bc1 = 1.0 - pow((double)b1, (double)o->t), bc2 = 1.0 - pow((double)b2, (double)o->t);
    const float step_size = (float)(lr / bc1), inv_sqrt_bc2 = (float)(1.0 / sqrt(bc2));
    for (int i = 0; i < gf_model_num_tensors(model); i++) {
        const gf_tensor_info *t = gf_model_tensor(model, i);
        if (!t->trainable) continue;
        float *p = t->data, *m = o->m + t->grad_offset, *v = o->v + t->grad_offset;
        const float *g = t->grad;
        const float decay = t->decay ? 1.0f - lr * o->hp.weight_decay : 1.0f;
#pragma omp parallel for schedule(static) if (t->numel > GF_PAR_MIN)
        for (int64_t k = 0; k < t->numel; k++) {
            float pk = p[k] * decay;
            float mk = b1 * m[k] + (1.0f - b1) * g[k];
            float vk = b2 * v[k] + (1.0f - b2) * g[k] * g[k];
            m[k] = mk;
            v[k] = vk;
            p[k] = pk - step_size * mk / (sqrtf(vk) * inv_sqrt_bc2 + eps);
        }
    }
    return 0;
}
