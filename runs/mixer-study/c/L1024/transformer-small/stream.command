build/grassflow bench generate --model transformer-small --vocab 65 --set max_len=1024 --positions 960 --tokens 64 --json
