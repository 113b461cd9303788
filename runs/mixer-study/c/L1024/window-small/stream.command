build/grassflow bench generate --model window-small --vocab 65 --set max_len=1024 --set window=128 --positions 960 --tokens 64 --json
