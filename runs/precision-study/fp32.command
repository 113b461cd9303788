build/grassflow compare --models grassmann-6L --corpus wikitext-2 --epochs 1 --batch 32 --seq-len 128 --eval-every 0 --seeds 1,2 --out runs/precision-study/fp32
