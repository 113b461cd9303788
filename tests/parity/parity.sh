#!/usr/bin/env bash
# PyTorch parity on tiny configs (tests/parity/configs/*.json): grassflow init writes the weights, the PyTorch
# reference (tests/parity/torch_ref) computes logits, loss, gradients and an AdamW trajectory from them in
# float64, and build/tests/parity_check holds the C model to those numbers.
set -euo pipefail
BUILD=${1:-build}
PY=/usr/bin/python3
if ! $PY -c 'import torch, numpy' 2>/dev/null; then
    echo "parity: PyTorch is missing for $PY; install it with: apt-get install python3-torch python3-numpy" >&2
    exit 1
fi
make --no-print-directory BUILD="$BUILD" "$BUILD/tests/parity_check" "$BUILD/tests/grassflow-blocks" >/dev/null
out=$(mktemp -d /tmp/grassflow-parity-XXXXXX)
trap 'rm -rf "$out"' EXIT
# name  batch  seq_len  ignored-tail  [pad] (the *_long cases run past max_len: positions none / sinusoidal;
# pad: rows of random lengths with a padding mask; the bidir_* cases are bidirectional classifiers;
# stacks_*: a second stack of another width and mixer on the first; pair_*: token types 0 then 1 (pool_pair: the
# head's pool "pair", InferSent's features of the two segments' means, a row's segment 1 empty or padded away too);
# distilbert_*: DistilBERT's layout (emb_norm, ln_eps 1e-12, post-norm attention, exact GELU) under a head;
# *linformer*: T = max_len (every column of E and F) and T < max_len (the first T only);
# window_*: window attention, causal past max_len and with globals, bidirectional with and without globals;
# the Grassmann ablations (plucker false, gate false, both) causal, padded and bidirectional;
# performer_*: omega read from the checkpoint, T 70 > one chunk of 64, causal LM and padded classifier;
# parallel_block_*: the test-only block kind of tests/plugins/block_parallel.c (build/tests/grassflow-blocks, which has
# it, writes every init) in two of three layers, padded; encdec_*: encoder-decoders (docs/model.md,
# "Encoder-decoders"), a source of T + 3 ids per row, padded with the targets under pad; gru_*: the GRU mixer,
# nn.GRU itself unpadded, torch.gru_cell position by position where padded; encdec_gru: a bidirectional GRU
# encoder, a GRU decoder with one cross head; encdec_gru_attn_*: the recurrent decoders that read the encoder
# themselves (mixer gru-attn: none, Bahdanau, Luong's dot, general and concat with input feeding, and without);
# bidir_grid_vectors: Grassmann on a grid of 4 columns (an image's patches: offsets as 2-D steps), padded;
# bidir_grid_sin2d: the same grid under pos sinusoidal-2d (each position its row's and its column's signal);
# grassmann_pre_mix_norm: block pre-mix-norm (alphaXiv's: a LayerNorm on the mixer's output), padded;
# bidir_grid_cls_last: the grid with one more position after it, pooled by the head's "last" (the image task's [CLS]);
# bidir_token_mlp_*: MLP-Mixer's token mixing (unpadded: it has no mask) beside grid Grassmann, T = max_len and T
# < max_len (the first T columns of fc1 and rows of fc2); fixed_mix_lm, bidir_fixed_mix_classify: sequence-independent
# mixing (spans 5, max_len and 1: no mixing) beside attention, causal and bidirectional, padded; attn_form_lm,
# bidir_attn_form_classify: attention's weights as relu, sigmoid and l1 (src/mixers/attn_form.c), padded;
# emb_qk_lm, bidir_emb_qk_classify: queries and keys from the input embeddings (emb_norm's output in the second);
# grassmann_conv: Grassmann's causal depthwise convolution before the reduction (K 3, 1, 4), padded;
# grassmann_gate_scalar: one gate per position (gate_form scalar) in two of three layers, with extra_proj, padded
# grassmann_offset_mix, bidir_grassmann_mix_classify: the mixtures over offsets (offset_mix learned, with heads and
# a repeated offset; token, with conv and extra_proj, and with 2 heads; bidirectional, token with the scalar gate), padded
# *_smooth: label smoothing (the config's label_smoothing: 0.1 on an encoder-decoder's next-token head, 0.2 on a
# classifier), against F.cross_entropy(label_smoothing=...); the C model in training mode (no dropout)
cases="
grassmann_pre 2 20 0
grassmann_post 2 20 0
grassmann_pre_mix_norm 3 20 0 pad
transformer_pre 2 20 0
transformer_post 2 20 0
hybrid_pre 2 20 3
hybrid_post_extra 2 17 0
grassmann_extra_proj 2 20 0
grassmann_schedule 2 12 0
misc_untied_tanh_sinusoidal 3 9 2
grassmann_pos_none_long 2 40 0
transformer_sinusoidal_long 2 30 0
bidir_grassmann_classify 4 18 1 pad
bidir_attention_classify 3 20 0 pad
bidir_hybrid_vectors 4 13 0 pad
bidir_grid_vectors 3 16 0 pad
bidir_grid_sin2d 3 20 0 pad
bidir_grid_cls_last 3 17 0 pad
bidir_grid_cls_smooth 3 17 0 pad
bidir_token_mlp_vectors 3 16 0
bidir_token_mlp_short 3 11 0
lm_hybrid_padded 3 20 0 pad
hybrid_last_preset 2 20 0
hybrid_middle_preset 3 20 0 pad
hybrid_window_preset 3 24 0 pad
stacks_classify 4 16 0 pad
stacks_lm 2 20 2
pair_classify_segments 4 19 0 pad
pair_classify_pool_pair 6 19 0 pad
snli_head_window 4 21 0 pad
distilbert_snli_head 4 22 0 pad
bidir_linformer_classify 4 20 0 pad
linformer_short_post 3 13 0 pad
window_lm_long 2 70 0
window_globals_lm 2 20 2
bidir_window_classify 4 20 0 pad
bidir_window_globals_classify 4 70 0 pad
grassmann_no_plucker 2 20 0
grassmann_no_gate 2 20 3
lm_ablations_padded 3 20 0 pad
bidir_ablations_classify 4 18 1 pad
performer_lm 3 70 0 pad
performer_bidir_classify 4 70 0 pad
parallel_block_hybrid 3 20 1 pad
encdec_transformer_pre 3 9 0 pad
encdec_transformer_smooth 3 9 0 pad
encdec_transformer_post 2 11 2
encdec_grassmann 3 10 1 pad
gru_lm 2 20 0
gru_bidir_classify 4 18 0 pad
encdec_gru 3 9 0 pad
encdec_gru_attn_none 3 9 0 pad
encdec_gru_attn_bahdanau 3 9 0 pad
encdec_gru_attn_dot 3 9 0 pad
encdec_gru_attn_general 3 9 0 pad
encdec_gru_attn_concat 3 9 0 pad
encdec_gru_attn_nofeed_post 2 10 1
fixed_mix_lm 3 20 2 pad
bidir_fixed_mix_classify 4 18 0 pad
attn_form_lm 3 20 2 pad
bidir_attn_form_classify 4 18 0 pad
emb_qk_lm 3 20 2 pad
bidir_emb_qk_classify 4 18 0 pad
grassmann_conv 3 20 2 pad
grassmann_gate_scalar 3 20 1 pad
grassmann_offset_mix 3 20 1 pad
bidir_grassmann_mix_classify 4 18 1 pad
"
# the cases whose tensors that start at 0 (conv.*, mix.mix.*) are drawn at random after the init (draw_tensors.py)
drawn="grassmann_conv grassmann_offset_mix bidir_grassmann_mix_classify pair_classify_pool_pair"
fail=0
# the inits, then every PyTorch fixture in one process, then the checks
while read -r name B T ign pad; do
    [ -n "$name" ] || continue
    "$BUILD/tests/grassflow-blocks" init --config "tests/parity/configs/$name.json" --seed 7 --out "$out/$name.init.safetensors" >/dev/null
    case " $drawn " in *" $name "*) $PY tests/parity/torch_ref/draw_tensors.py "$out/$name.init.safetensors" ;; esac
    echo "--init $out/$name.init.safetensors --out $out/$name.ref.safetensors --batch $B --seq-len $T --seed 11 --ignore-tail $ign ${pad:+--pad}"
done <<< "$cases" >"$out/jobs"
OMP_NUM_THREADS=1 $PY tests/parity/torch_ref/make_fixture.py --jobs "$out/jobs" >/dev/null
while read -r name B T ign pad; do
    [ -n "$name" ] || continue
    "$BUILD/tests/parity_check" "$out/$name.init.safetensors" "$out/$name.ref.safetensors" || fail=1
done <<< "$cases"
if [ $fail -ne 0 ]; then echo "parity: FAILED" >&2; exit 1; fi
echo "parity: all configs match PyTorch"
