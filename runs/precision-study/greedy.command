build/grassflow generate --ckpt runs/precision-study/fp32/grassmann-6L/seed-1/best.safetensors --prompt PROMPT --tokens 40 --temperature 0 --weights W
