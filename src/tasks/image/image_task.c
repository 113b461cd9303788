/* The image task (issue 53): greyscale images classified, each read as a sequence of P x P patches in raster
 * order (the patch grid row by row), a patch's pixels (scaled to [0, 1], centred by the data set's mean and
 * spread) one input vector of P^2 numbers: the model reads vectors (input "vectors", d_input = P^2), and its input
 * projection is the patch embedding. The data: Fashion-MNIST (or MNIST) in IDX files (io/idx.c), plain or gzip:
 *   --corpus fashion-mnist          Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist)
 *   --corpus fashion-mnist-sample   the sample grassflow ships (data/fashion-mnist: 2,000 training images and 500
 *                                   test images of the full set's, its licence and provenance beside them)
 *   --corpus DIR                    a folder of train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
 *                                   t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz] (MNIST's names)
 * The splits: train is the training file's images but every tenth (i % 10 == 9), which are valid; test is the
 * t10k file. docs/images.md has the rest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/error.h"
#include "base/rng.h"
#include "io/grey_image.h"
#include "io/idx.h"
#include "sources/source.h"
#include "tasks/task.h"

enum { N_CLASSES = 10, MAX_SIDE = 512 };
#define IDX_MAX_BYTES ((int64_t)256 << 20) /* 4 times the full Fashion-MNIST training file */

typedef struct {
    int64_t patch;
    int labels; /* 0 fashion, 1 digits: the class names, and the pixels' mean and spread */
    int64_t crop; /* training only: shift each image by up to this many pixels (the background, 0, fills in) */
    bool flip;    /* training only: mirror each image left to right with probability 1/2 */
    int64_t size; /* the images' side: the data's must be it; a user's own image is resized to it */
    bool cls;     /* one more position after the patches, all zeros, that the head pools (pool "last") */
} image_options;

static const char *const LABEL_SETS[] = {"fashion", "digits", NULL};
static const gf_cfg_key IMAGE_KEYS[] = {
    {.name = "patch", .type = GF_KEY_INT, .off = offsetof(image_options, patch), .lo = 1, .hi = MAX_SIDE, .def = "4",
     .help = "P: each image a sequence of P x P patches (P must divide its sides: 28 x 28 gives 49 patches of 4)"},
    {.name = "labels", .type = GF_KEY_ENUM, .off = offsetof(image_options, labels), .names = LABEL_SETS,
     .def = "\"fashion\"", .help = "the classes' names and the pixels' mean and spread: fashion (Fashion-MNIST's) or "
     "digits (MNIST's)"},
    {.name = "crop", .type = GF_KEY_INT, .off = offsetof(image_options, crop), .lo = 0, .hi = 64, .def = "0",
     .help = "augmentation, training only: a random crop of the image padded by this many background pixels on "
     "each side (a shift of up to crop pixels each way), drawn from the run's seed, the epoch and the image; 0: none"},
    {.name = "flip", .type = GF_KEY_BOOL, .off = offsetof(image_options, flip), .def = "false",
     .help = "augmentation, training only: each image mirrored left to right with probability 1/2, drawn as crop is"},
    {.name = "size", .type = GF_KEY_INT, .off = offsetof(image_options, size), .lo = 1, .hi = MAX_SIDE, .def = "28",
     .help = "the side of the square images the model reads: the data's must have it, and a user's own image (a "
     ".png or .pgm file, or a .txt list of them, at predict) is resized to it"},
    {.name = "cls", .type = GF_KEY_BOOL, .off = offsetof(image_options, cls), .def = "false",
     .help = "a [CLS] position after the patches (its input all zeros, so its embedding is the input projection's "
     "bias plus its own position's) that the head pools (head.pool last) instead of the mean over the patches"},
};

static const char *const FASHION[N_CLASSES] = {"t-shirt", "trouser", "pullover", "dress", "coat",
                                               "sandal", "shirt", "sneaker", "bag", "ankle-boot"};
static const char *const DIGITS[N_CLASSES] = {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
static const float MEAN[2] = {0.2860f, 0.1307f}, STD[2] = {0.3530f, 0.3081f}; /* of each set's training images */

typedef struct {
    int64_t n;
    const uint8_t *px; /* n x H x W */
    const uint8_t *y;  /* n; NULL: a user's images, without labels */
    int64_t *index;    /* the split's images in its file (train and valid share one) */
} image_split;

typedef struct {
    int64_t H, W, P;
    int labels;
    gf_idx im[2], lb[2]; /* the training and the test files */
    uint8_t *own;        /* a user's images (whole-file mode), resized: n x H x W */
    image_split split[3];
} image_data;

static void image_free(void *data) {
    image_data *d = data;
    if (!d) return;
    for (int f = 0; f < 2; f++) gf_idx_free(&d->im[f]), gf_idx_free(&d->lb[f]);
    for (int s = 0; s < 3; s++) free(d->split[s].index);
    free(d->own);
    free(d);
}

/* The folder of a corpus name or path. */
static int corpus_dir(const gf_task_env *e, char *dir, size_t n) {
    if (!strcmp(e->corpus, "fashion-mnist")) return snprintf(dir, n, "/usr/share/datasets/fashion-mnist") < (int)n ? 0 : -1;
    if (!strcmp(e->corpus, "fashion-mnist-sample")) return gf_path_join(dir, n, e->data_dir ? e->data_dir : "data", "fashion-mnist");
    return snprintf(dir, n, "%s", e->corpus) < (int)n ? 0 : gf_fail("--corpus: path too long");
}

/* DIR/NAME.gz, or DIR/NAME, whichever is there, into path. */
static int find_file(const char *dir, const char *name, const char *corpus, char *path, size_t n) {
    struct stat st;
    char file[96];
    for (int gz = 1; gz >= 0; gz--) {
        snprintf(file, sizeof file, "%s%s", name, gz ? ".gz" : "");
        if (gf_path_join(path, n, dir, file)) return -1;
        if (stat(path, &st) == 0) return 0;
    }
    if (!strcmp(corpus, "fashion-mnist"))
        return gf_fail("--corpus fashion-mnist: %s/%s.gz is missing\nHINT: apt-get install dataset-fashion-mnist (or "
                       "bash scripts/install-deps.sh), or --corpus fashion-mnist-sample (the sample grassflow ships)",
                       dir, name);
    return gf_fail("--corpus %s: no %s or %s.gz in %s\nHINT: a folder of MNIST's four IDX files (train-images-idx3-"
                   "ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz, t10k-labels-idx1-ubyte.gz), or "
                   "--corpus fashion-mnist", corpus, name, name, dir);
}

/* File f (0 train, 1 t10k): its images and labels, checked against each other and the patch size. */
static int read_pair(image_data *d, const char *dir, const char *corpus, int f) {
    static const char *const stem[2] = {"train", "t10k"};
    char name[64], ip[GF_PATH_MAX], lp[GF_PATH_MAX];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte", stem[f]);
    if (find_file(dir, name, corpus, ip, sizeof ip) || gf_idx_read(ip, 3, IDX_MAX_BYTES, &d->im[f])) return -1;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", stem[f]);
    if (find_file(dir, name, corpus, lp, sizeof lp) || gf_idx_read(lp, 1, IDX_MAX_BYTES, &d->lb[f])) return -1;
    const gf_idx *im = &d->im[f], *lb = &d->lb[f];
    if (im->dims[0] != lb->dims[0])
        return gf_fail("%s holds %lld images and %s %lld labels; expected one label per image", gf_show_name(ip),
                       (long long)im->dims[0], gf_show_name(lp), (long long)lb->dims[0]);
    if (im->dims[0] == 0) return gf_fail("%s holds no image", gf_show_name(ip));
    if (im->dims[1] != d->H || im->dims[2] != d->W)
        return gf_fail("%s: images of %lld x %lld; --size is %lld (square images of that side)\nHINT: --size %lld, "
                       "if they are square", gf_show_name(ip), (long long)im->dims[1], (long long)im->dims[2],
                       (long long)d->H, (long long)im->dims[1]);
    if (d->H > MAX_SIDE || d->W > MAX_SIDE || d->H % d->P || d->W % d->P)
        return gf_fail("%s: images of %lld x %lld; patch %lld must divide both sides (and they be at most %d)\nHINT: "
                       "--patch 4 or 7 for 28 x 28 images", gf_show_name(ip), (long long)d->H, (long long)d->W,
                       (long long)d->P, MAX_SIDE);
    for (int64_t i = 0; i < lb->n; i++)
        if (lb->data[i] >= N_CLASSES)
            return gf_fail("%s: label %d at image %lld; expected 0 to %d", gf_show_name(lp), lb->data[i], (long long)i,
                           N_CLASSES - 1);
    return 0;
}

/* Split s's images (of file f; train and valid: i % 10 != 9 and == 9). */
static int make_split(image_data *d, int s) {
    const int f = s == GF_TEST;
    image_split *sp = &d->split[s];
    const int64_t N = d->im[f].dims[0];
    sp->index = malloc((size_t)N * sizeof *sp->index);
    if (!sp->index) return gf_fail("out of memory");
    for (int64_t i = 0; i < N; i++)
        if (f || (s == GF_VALID) == (i % 10 == 9)) sp->index[sp->n++] = i;
    sp->px = d->im[f].data, sp->y = d->lb[f].data;
    if (!sp->n) return gf_fail("the %s split has no image (a training file of %lld images)", s == GF_VALID ? "valid" : "train", (long long)N);
    return 0;
}

/* Whether path ends in ext (case aside). */
static bool ends_in(const char *path, const char *ext) {
    const size_t n = strlen(path), k = strlen(ext);
    return n > k && !strcasecmp(path + n - k, ext);
}

/* A user's image, resized to size x size, appended to d->own (n of them so far). */
static int add_own(image_data *d, const char *path, int64_t n) {
    gf_grey_image im;
    if (gf_grey_image_read(path, 1 << 14, &im)) return -1;
    uint8_t *own = realloc(d->own, (size_t)((n + 1) * d->H * d->W));
    if (!own) {
        gf_grey_image_free(&im);
        return gf_fail("out of memory");
    }
    d->own = own;
    gf_grey_image_resize(&im, d->H, d->W, own + n * d->H * d->W);
    gf_grey_image_free(&im);
    return 0;
}

/* A .txt list of image paths, one a line (relative ones to the list's folder): each appended; the count. */
static int64_t add_list(image_data *d, const char *list) {
    size_t len = 0;
    char *text = (char *)gf_read_file(list, (size_t)16 << 20, &len), dir[GF_PATH_MAX], path[GF_PATH_MAX];
    if (!text) return -1;
    snprintf(dir, sizeof dir, "%s", list);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    else snprintf(dir, sizeof dir, ".");
    int64_t n = 0, lineno = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        lineno++;
        line[strcspn(line, "\r")] = '\0';
        if (!line[0]) continue;
        if (line[0] == '/' ? snprintf(path, sizeof path, "%s", line) >= (int)sizeof path
                           : gf_path_join(path, sizeof path, dir, line) != 0) {
            free(text);
            return gf_fail("%s: a path too long: %.80s", gf_show_name(list), line);
        }
        if (add_own(d, path, n++)) {
            char why[1024];
            snprintf(why, sizeof why, "%s", gf_last_error());
            free(text);
            return gf_fail("%s:%lld: %s", gf_show_name(list), (long long)lineno, why);
        }
    }
    free(text);
    return n ? n : gf_fail("%s: no image path in it; expected one .png or .pgm path a line", gf_show_name(list));
}

/* Whole-file mode (predict, eval): a .png or .pgm file, or a .txt list of them, as every split, without labels. */
static int load_own(image_data *d, const char *corpus) {
    const int64_t n = ends_in(corpus, ".txt") ? add_list(d, corpus) : add_own(d, corpus, 0) ? -1 : 1;
    if (n < 0) return -1;
    for (int s = 0; s < 3; s++) {
        image_split *sp = &d->split[s];
        if (!(sp->index = malloc((size_t)n * sizeof *sp->index))) return gf_fail("out of memory");
        for (int64_t i = 0; i < n; i++) sp->index[i] = i;
        sp->n = n, sp->px = d->own, sp->y = NULL;
    }
    return 0;
}

static bool own_images(const char *corpus) {
    return ends_in(corpus, ".png") || ends_in(corpus, ".pgm") || ends_in(corpus, ".txt");
}

static int image_load(const gf_task_env *e, const void *options, void **data) {
    const image_options *o = options;
    if (e->tokenizer && e->tokenizer[0])
        return gf_fail("--tokenizer %s: task image reads pixels; it takes no tokenizer", e->tokenizer);
    if (o->size % o->patch)
        return gf_fail("--patch %lld must divide --size %lld (the images' side)\nHINT: --patch 4 or 7 for 28 x 28 "
                       "images", (long long)o->patch, (long long)o->size);
    char dir[GF_PATH_MAX];
    image_data *d = calloc(1, sizeof *d);
    if (!d) return gf_fail("out of memory");
    d->P = o->patch, d->labels = o->labels, d->H = d->W = o->size;
    if (own_images(e->corpus)) {
        if (load_own(d, e->corpus)) {
            image_free(d);
            return -1;
        }
        *data = d;
        return 0;
    }
    int rc = corpus_dir(e, dir, sizeof dir);
    if (!rc && (e->splits & (1u << GF_TRAIN | 1u << GF_VALID))) rc = read_pair(d, dir, e->corpus, 0);
    if (!rc && (e->splits & 1u << GF_TEST)) rc = read_pair(d, dir, e->corpus, 1);
    for (int s = 0; !rc && s < 3; s++)
        if (e->splits & (1u << s)) rc = make_split(d, s);
    if (rc) {
        image_free(d);
        return -1;
    }
    *data = d;
    return 0;
}

/* A classifier of P^2-vectors over the patch grid, bidirectional (an image has no order to respect). With cls,
 * one position more after the grid's last patch, pooled by the head: it sits at (grid rows, 0), one row below
 * the grid, so that every patch keeps its cell (what Grassmann's grid offsets and sinusoidal-2d read). */
static int image_configure(const void *data, const void *options, gf_config *cfg) {
    const image_options *o = options;
    char kv[5][64];
    snprintf(kv[0], sizeof kv[0], "d_input=%lld", (long long)(o->patch * o->patch));
    snprintf(kv[1], sizeof kv[1], "task=classify");
    snprintf(kv[2], sizeof kv[2], "input=vectors");
    snprintf(kv[3], sizeof kv[3], "head.n_classes=%d", N_CLASSES);
    snprintf(kv[4], sizeof kv[4], "direction=bidirectional");
    for (int i = 0; i < 5; i++)
        if (gf_config_set(cfg, kv[i])) return -1;
    if (o->cls && gf_config_set(cfg, "head.pool=last")) return -1;
    const image_data *d = data;
    if (d && cfg->pos_grid != d->W / d->P) { /* the patch grid's columns (what pos sinusoidal-2d reads) */
        snprintf(kv[0], sizeof kv[0], "pos_grid=%lld", (long long)(d->W / d->P));
        if (gf_config_set(cfg, kv[0])) return -1;
    }
    if (!d || cfg->pos != GF_POS_LEARNED) return 0;
    const int64_t T = (d->H / d->P) * (d->W / d->P) + o->cls;
    snprintf(kv[0], sizeof kv[0], "max_len=%lld", (long long)T); /* learned positions: one per patch (and cls) */
    return cfg->max_len == T ? 0 : gf_config_set(cfg, kv[0]);
}

/* ---- the source: image i of a split as its patches, in an order shuffled per epoch ---------------------- */

typedef struct {
    gf_source base;
    const image_data *d;
    const image_split *sp;
    image_options aug;               /* crop and flip (training fills only) */
    uint8_t *shifted;                /* H x W: one augmented image */
    uint64_t seed;
    int64_t *perm, perm_epoch, T, D; /* positions an image (its patches, and cls), numbers a patch */
    float *x;
    int32_t *y;
    int64_t cap;                     /* images x and y hold */
} image_source;

static int64_t is_n(void *ctx) { return ((image_source *)ctx)->sp->n; }

/* Image `img` augmented for epoch into s->shifted: shifted by (dy, dx) in [-crop, crop] (background 0 where it
 * moves in), mirrored with probability 1/2 under flip, each drawn from (seed, epoch, img). */
static const uint8_t *augmented(const image_source *s, int64_t epoch, int64_t img, const uint8_t *px) {
    const int64_t H = s->d->H, W = s->d->W, c = s->aug.crop;
    const uint64_t key = gf_key(gf_key(gf_key(s->seed, 0x696d616765ULL), (uint64_t)epoch), (uint64_t)img);
    const int64_t dy = c ? (int64_t)(gf_rand64(key, 0) % (uint64_t)(2 * c + 1)) - c : 0;
    const int64_t dx = c ? (int64_t)(gf_rand64(key, 1) % (uint64_t)(2 * c + 1)) - c : 0;
    const bool mirror = s->aug.flip && (gf_rand64(key, 2) & 1);
    for (int64_t i = 0; i < H; i++)
        for (int64_t j = 0; j < W; j++) {
            const int64_t si = i + dy, sj = (mirror ? W - 1 - j : j) + dx;
            s->shifted[i * W + j] = si >= 0 && si < H && sj >= 0 && sj < W ? px[si * W + sj] : 0;
        }
    return s->shifted;
}

/* Image `img` of its file as its patches of D numbers into x (then cls's zeros); in a training fill (epoch >= 0),
 * augmented. */
static void patches(const image_source *s, int64_t epoch, int64_t img, float *x) {
    const image_data *d = s->d;
    const int64_t P = d->P, gw = d->W / P, n = (d->H / P) * gw;
    const float mean = MEAN[d->labels], inv = 1.0f / STD[d->labels];
    const uint8_t *px = s->sp->px + img * d->H * d->W;
    if (epoch >= 0 && (s->aug.crop || s->aug.flip)) px = augmented(s, epoch, img, px);
    if (s->T > n) memset(x + n * s->D, 0, (size_t)((s->T - n) * s->D) * sizeof *x);
    for (int64_t t = 0; t < n; t++) {
        const int64_t r0 = t / gw * P, c0 = t % gw * P;
        for (int64_t i = 0; i < P; i++)
            for (int64_t j = 0; j < P; j++) x[t * s->D + i * P + j] = ((float)px[(r0 + i) * d->W + c0 + j] / 255.0f - mean) * inv;
    }
}

static int is_fill(void *ctx, int64_t epoch, int64_t first, int64_t n, gf_batch *b) {
    image_source *s = ctx;
    const int64_t N = s->sp->n;
    if (gf_source_range("image source", first, n, N)) return -1;
    if (n > s->cap) {
        float *x = realloc(s->x, (size_t)(n * s->T * s->D) * sizeof *x);
        if (x) s->x = x;
        int32_t *y = x ? realloc(s->y, (size_t)n * sizeof *y) : NULL;
        if (!x || !y) return gf_fail("out of memory for a batch of %lld images", (long long)n);
        s->y = y, s->cap = n;
    }
    if (epoch >= 0 && gf_epoch_perm("image source", s->perm, &s->perm_epoch, N, s->seed, epoch)) return -1;
    for (int64_t k = 0; k < n; k++) {
        const int64_t img = s->sp->index[epoch < 0 ? first + k : s->perm[first + k]];
        patches(s, epoch, img, s->x + k * s->T * s->D);
        s->y[k] = s->sp->y ? s->sp->y[img] : -1; /* a user's image has no label */
    }
    *b = (gf_batch){.B = n, .T = s->T, .vectors = s->x, .targets = s->y, .n_targets = n};
    return 0;
}

/* Evaluation: the split in file order. */
static int is_fill_eval(void *ctx, int64_t first, int64_t n, gf_batch *b) { return is_fill(ctx, -1, first, n, b); }

static void is_destroy(gf_source *src) {
    image_source *s = (image_source *)src;
    free(s->perm), free(s->x), free(s->y), free(s->shifted), free(s);
}

static gf_source *image_source_make(const void *data, int split, const void *options, uint64_t seed) {
    const image_data *d = data;
    image_source *s = calloc(1, sizeof *s);
    if (!s) return gf_fail("out of memory"), NULL;
    *s = (image_source){.d = d, .sp = &d->split[split], .seed = seed, .perm_epoch = -1,
                        .T = (d->H / d->P) * (d->W / d->P) + ((const image_options *)options)->cls, .D = d->P * d->P,
                        .aug = *(const image_options *)options};
    s->perm = malloc((size_t)s->sp->n * sizeof *s->perm);
    s->shifted = malloc((size_t)(d->H * d->W));
    s->base = (gf_source){.version = GF_SOURCE_VERSION, .ctx = s, .n_examples = is_n, .fill = is_fill,
                          .n_eval_examples = is_n, .fill_eval = is_fill_eval, .destroy = is_destroy};
    if (!s->perm || !s->shifted) {
        is_destroy(&s->base);
        return gf_fail("out of memory"), NULL;
    }
    return &s->base;
}

static void image_describe(const void *data, char *buf, size_t n) {
    const image_data *d = data;
    snprintf(buf, n, "%lld train images (valid %lld, test %lld) of %lld x %lld, each %lld patches of %lld x %lld, %d "
             "classes", (long long)d->split[GF_TRAIN].n, (long long)d->split[GF_VALID].n, (long long)d->split[GF_TEST].n,
             (long long)d->H, (long long)d->W, (long long)((d->H / d->P) * (d->W / d->P)), (long long)d->P,
             (long long)d->P, N_CLASSES);
}

static const char *image_label(const void *data, int64_t i) {
    const image_data *d = data;
    return i >= 0 && i < N_CLASSES ? (d->labels ? DIGITS : FASHION)[i] : NULL;
}

static int image_owns(const char *corpus, const char *data_dir) {
    (void)data_dir;
    if (ends_in(corpus, ".png") || ends_in(corpus, ".pgm")) return GF_TASK_OWNS_WHOLE;
    return !strcmp(corpus, "fashion-mnist") || !strcmp(corpus, "fashion-mnist-sample");
}

const gf_task_ops gf_task_image = {
    .version = GF_TASK_OPS_VERSION, .name = "image",
    .help = "greyscale image classification (Fashion-MNIST, MNIST): each image a sequence of P x P patches",
    .metric = "accuracy", .unit = "images", .counted = "images", .options_size = sizeof(image_options),
    .keys = IMAGE_KEYS, .n_keys = (int)(sizeof IMAGE_KEYS / sizeof IMAGE_KEYS[0]), .load = image_load,
    .configure = image_configure, .source = image_source_make, .describe = image_describe, .label = image_label,
    .owns = image_owns, .free = image_free,
    .data_help = "--corpus fashion-mnist (Debian's dataset-fashion-mnist) | fashion-mnist-sample (2,000 training\n"
                 "and 500 test images grassflow ships) | a folder of MNIST's four IDX files ({train,t10k}-{images-\n"
                 "idx3,labels-idx1}-ubyte, plain or .gz); valid is every tenth training image | for predict, a\n"
                 "greyscale .png or .pgm image, or a .txt list of them (one path a line), resized to --size; no\n"
                 "--tokenizer\n"};
