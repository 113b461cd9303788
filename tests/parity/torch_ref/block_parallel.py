"""The test-only parallel block (tests/plugins/block_parallel.c's twin), registered with the PyTorch reference:
out = h + Drop(mix(ln1(h))) + Drop(FFN(ln1(h)))."""
from grassflow.torch_model import register_block


def _parallel(b, h, mask):
    x = b.ln1(h)
    return h + b.drop_mix(b.mix(x, mask)) + b.drop_ffn(b.ffn(x))


register_block("parallel", 1, _parallel)
