/* A PyTorch checkpoint read without Python: the zip that torch.save writes (torch >= 1.6; io/zip.h), its
 * data.pkl read by the restricted unpickler (io/pickle.h), and each tensor's bytes taken from its storage
 * entry. The tensors are those of the state dict: the file's top-level dict when its values are tensors, else
 * its "model_state_dict", "state_dict" or "model" member (the reproductions' {epoch, model_state_dict,
 * optimizer_state_dict, val_loss, val_ppl}); torch.compile's "_orig_mod." and DataParallel's "module."
 * prefixes are stripped from the names. Sizes, strides and offsets are checked against the storage (a view past
 * its end, or larger than its storage, is refused), and every tensor is copied out contiguous. */
#ifndef GF_IO_TORCH_CKPT_H
#define GF_IO_TORCH_CKPT_H

#include <stddef.h>
#include <stdint.h>

enum { GF_TORCH_MAX_DIMS = 8 };
typedef enum { GF_TT_F32, GF_TT_F16, GF_TT_BF16, GF_TT_F64, GF_TT_I64, GF_TT_I32, GF_TT_I16, GF_TT_I8, GF_TT_U8,
               GF_TT_BOOL } gf_torch_dtype;

typedef struct gf_torch_tensor {
    char *name;
    gf_torch_dtype dtype;
    int ndim;
    int64_t shape[GF_TORCH_MAX_DIMS], numel;
    void *data; /* numel elements of dtype, row-major */
} gf_torch_tensor;

typedef struct gf_torch_ckpt {
    gf_torch_tensor *t;
    int64_t n;
    /* the top-level dict's numbers, when it has them (NaN otherwise) */
    double epoch, val_loss, val_ppl;
    int stripped; /* how many names lost a "_orig_mod." or "module." prefix */
} gf_torch_ckpt;

/* Read path into *c. 0, or -1 (gf_fail: the file, what is wrong, and where). */
int gf_torch_load(const char *path, gf_torch_ckpt *c);
/* The same from len bytes in memory (what names them in errors). */
int gf_torch_load_buffer(const uint8_t *buf, size_t len, const char *what, gf_torch_ckpt *c);
void gf_torch_free(gf_torch_ckpt *c);
/* The tensor called name, or NULL. */
const gf_torch_tensor *gf_torch_find(const gf_torch_ckpt *c, const char *name);
/* Tensor t's elements as floats into out (t->numel of them): exact for f32, f16, bf16 and integers up to 2^24.
 * 0, or -1 (gf_fail) for a dtype that is not a number. */
int gf_torch_to_f32(const gf_torch_tensor *t, float *out);
/* The numbers a reproduction saves beside its state dict (NaN: not written). */
typedef struct gf_torch_numbers {
    double epoch, val_loss, val_ppl;
} gf_torch_numbers;
/* Write {"model_state_dict": OrderedDict(t[i].name: t[i]), "epoch", "val_loss", "val_ppl"} as torch.save does
 * (io/torch_save.c), atomically. Only GF_TT_F32 and GF_TT_I64 tensors; tensors with one data array share one
 * storage. 0, or -1 (gf_fail). */
int gf_torch_save(const char *path, const gf_torch_tensor *t, int64_t n, const gf_torch_numbers *x);
const char *gf_torch_dtype_name(gf_torch_dtype d);
int gf_torch_dtype_size(gf_torch_dtype d); /* bytes an element */

#endif
