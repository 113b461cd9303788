build/grassflow bench generate --model window-small --vocab 65 --set max_len=4096 --set window=128 --positions 4032 --tokens 64 --json
