build/grassflow bench generate --model window-small --vocab 65 --set max_len=256 --set window=128 --positions 192 --tokens 64 --json
