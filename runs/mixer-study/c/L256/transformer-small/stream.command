build/grassflow bench generate --model transformer-small --vocab 65 --set max_len=256 --positions 192 --tokens 64 --json
