build/grassflow eval --ckpt runs/precision-study/fp32/grassmann-6L/seed-1/best.safetensors --corpus wikitext-2 --split valid --stream --weights int8 --json
