/* A block kind added from this file alone (one table entry, one registration): no line of the library names
 * it. The parallel block (GPT-J's): one LayerNorm feeds both branches,
 *
 *   parallel   out = h + Drop(mix(ln1(h))) + Drop(FFN(ln1(h)))
 *
 * Linked into every test program (Makefile: the tests' link line) and into build/tests/grassflow-blocks (the
 * command with it), so a config reaches it by name ("block": "parallel" in a layer, --set block=parallel):
 * tests/unit/test_block_kinds.c trains and streams it, tests/parity/parity.sh holds it to the PyTorch reference (its twin:
 * tests/parity/torch_ref/block_parallel.py). */
#include <stdio.h>
#include <stdlib.h>

#include "model/block.h"

static const block_tensor PARALLEL_TENSORS[] = {BLOCK_TENSORS_LN("ln1", 0), BLOCK_TENSORS_MIX, BLOCK_TENSORS_FFN};

/* slots: 0 h | 1 ln1(h) | 2 mix (dropped in place) | 3 ffn (dropped in place) | 4 h + mix | 5 out */
static const block_kind PARALLEL = {"parallel", 6, 7, {
    {BOP_LN, 0, 0, 1, 0}, {BOP_MIX, 1, 0, 2, 0}, {BOP_DROP, 2, 0, 2, 0}, {BOP_FFN, 1, 0, 3, 0},
    {BOP_DROP, 3, 0, 3, 1}, {BOP_ADD, 0, 2, 4, 0}, {BOP_ADD, 4, 3, 5, 0},
}, (int)(sizeof PARALLEL_TENSORS / sizeof PARALLEL_TENSORS[0]), PARALLEL_TENSORS};

__attribute__((constructor)) static void register_parallel(void) {
    if (gf_block_kind_register(&PARALLEL)) {
        fprintf(stderr, "block_parallel: %s\n", gf_last_error());
        exit(3);
    }
}
